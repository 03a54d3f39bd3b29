import { describe, expect, it } from "vitest";
import { headlineCells } from "./headline";

describe("headlineCells", () => {
  const ref = { id: 1, policy: "verl", name: "#1", url: "/runs/1/", values: {} };
  it("shows only logged numbers, with a ratio and a verdict by which way is better", () => {
    const cells = headlineCells({ values: { throughput: 250, tail: 12 }, ratios: { throughput: 1.1, tail: 1.5 }, reference: ref });
    expect(cells.map((c) => c.key)).toEqual(["throughput", "tail"]);
    expect(cells[0]).toMatchObject({ value: "250.0 tok/s", ratio: "1.10×", verdict: "good" });
    expect(cells[1]).toMatchObject({ value: "12.00 s", ratio: "1.50×", verdict: "bad" });
  });
  it("leaves the ratio out where the server gave none, and calls 2% a tie", () => {
    const cells = headlineCells({ values: { reward: 0.5, accept_len: 2 }, ratios: { accept_len: 1.01 }, reference: null });
    expect(cells.find((c) => c.key === "reward")).toMatchObject({ ratio: "", verdict: "" });
    expect(cells.find((c) => c.key === "accept_len")).toMatchObject({ ratio: "1.01×", verdict: "" });
  });
  it("labels validation and training accuracy apart, validation first", () => {
    const cells = headlineCells({ values: { accuracy: 0.3, val_accuracy: 0.9 }, ratios: {}, reference: null });
    expect(cells.map((c) => c.label)).toEqual(["Val accuracy", "Train accuracy"]);
  });
  it("gives no verdict against a reference that ran concurrently", () => {
    const cells = headlineCells({ values: { throughput: 100 }, ratios: { throughput: 0.48 },
                                  reference: { ...ref, concurrent: true } });
    expect(cells[0]).toMatchObject({ ratio: "0.48×", verdict: "concurrent" });
  });
});
