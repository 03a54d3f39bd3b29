import { describe, expect, it } from "vitest";
import { readoutText } from "./charts";
import { durationText, etaText, percentDone, rowUpdates, unlistedText } from "./runs-table";

describe("rowUpdates", () => {
  it("maps a run_row message to the table's cells", () => {
    expect(rowUpdates({ type: "run_row", run: 3, state: "running", iterations_done: 4,
                        values: { "rollout/throughput_tok_s": 231.04, "reward/mean": 0.5, "train/loss": 1 } }))
      .toEqual({ state: "running", done: "4", throughput: "231.0", reward: "0.500" });
  });
  it("shows validation accuracy over training accuracy, and never training's over validation's", () => {
    const values = { "reward/accuracy": 0.25, "val/accuracy": 0.875 };
    expect(rowUpdates({ type: "run_row", run: 3, state: null, iterations_done: null, values }))
      .toEqual({ val_accuracy: "0.875" });
    expect(rowUpdates({ type: "run_row", run: 3, state: null, iterations_done: null,
                        values: { "reward/accuracy": 0.25 } }, true)).toEqual({});
    expect(rowUpdates({ type: "run_row", run: 3, state: null, iterations_done: null,
                        values: { "reward/accuracy": 0.25 } })).toEqual({ accuracy: "0.250" });
  });
  it("changes nothing that is not in the message", () => {
    expect(rowUpdates({ type: "run_row", run: 3, state: null, iterations_done: null, values: {} })).toEqual({});
  });
});

describe("percentDone", () => {
  it("is capped and full once succeeded", () => {
    expect(percentDone(3, 12, "running")).toBe(25);
    expect(percentDone(30, 12, "running")).toBe(100);
    expect(percentDone(0, 0, "succeeded")).toBe(100);
    expect(percentDone(2, 0, "running")).toBe(0);
  });
});

describe("readoutText", () => {
  it("shows the hovered point, and nothing when nothing is hovered", () => {
    expect(readoutText("iteration", 3, 231.04, "tok/s")).toBe("iteration 3 · 231.0 tok/s");
    expect(readoutText("seconds since the first point", 12.5, 0.5, "")).toBe("12.50 s · 0.500");
    expect(readoutText("iteration", null, null, "")).toBe("");
  });
});

describe("etaText and durationText", () => {
  it("re-estimates the ETA as iterations end, and only while running", () => {
    expect(etaText(12, 6, 100, "running")).toBe(" · ETA 10m 00s");
    expect(etaText(12, 7, 100, "running")).toBe(" · ETA 8m 20s");
    expect(etaText(12, 12, 100, "succeeded")).toBe("");
    expect(etaText(12, 0, null, "running")).toBe("");
  });
  it("counts to now while running and stops at the finish", () => {
    expect(durationText(1000, null, 1095)).toBe("1m 35s");
    expect(durationText(1000, 1007, 5000)).toBe("7s");
    expect(durationText(null, null, 5000)).toBe("—");
  });
});

describe("unlistedText", () => {
  it("names the runs the table does not list", () => {
    expect(unlistedText([12])).toBe("Run #12 changed and is not listed here.");
    expect(unlistedText([14, 12, 13])).toBe("3 runs not listed here changed (#12, #13, #14).");
    expect(unlistedText([1, 2, 3, 4, 5, 6])).toBe("6 runs not listed here changed (#1, #2, #3, #4, #5, …).");
  });
});
