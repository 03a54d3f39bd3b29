import { describe, expect, it } from "vitest";
import { barLabel, barTop, barValueText, timelineEnd, visibleBarHeights } from "./whatif-charts";
import type { Trace } from "./types";
import { summaryColumns } from "./whatif";

describe("barLabel", () => {
  it("breaks a long policy name after its first hyphen and leaves short ones whole", () => {
    expect(barLabel("seer-no-spec")).toBe("seer-\nno-spec");
    expect(barLabel("static-group")).toBe("static-\ngroup");
    expect(barLabel("seer")).toBe("seer");
    expect(barLabel("request-lb")).toBe("request-lb"); // 10 characters: fits
    expect(barLabel("averyverylongname")).toBe("averyverylongname"); // no hyphen to break at
  });

  it("is pure: the same name gives the same label", () => {
    expect(barLabel("oracle-lfs-x")).toBe(barLabel("oracle-lfs-x"));
  });
});

describe("barValueText", () => {
  it("writes ratios with ×, plain values as numbers, a dash without one", () => {
    expect(barValueText(1.1923, true)).toBe("1.19×");
    expect(barValueText(0.01, true)).toBe("0.01×");
    expect(barValueText(196.8, false)).toBe("196.8");
    expect(barValueText(null, true)).toBe("—");
    expect(barValueText(Number.NaN, false)).toBe("—");
  });
});

describe("visibleBarHeights", () => {
  it("raises a tiny positive bar to the minimum and leaves the rest", () => {
    expect(visibleBarHeights([1, 0.01, 0.5], 1)).toEqual([1, 0.02, 0.5]);
    expect(visibleBarHeights([0, null, -1, undefined], 1)).toEqual([0, 0, 0, 0]);
  });
});

describe("barTop", () => {
  it("leaves room above the tallest bar for its label", () => {
    expect(barTop([1, 0.5], true)).toBe(1.18);
    expect(barTop([0.2], true)).toBe(1.1);
    expect(barTop([200, 100], false)).toBeCloseTo(236);
    expect(barTop([null], false)).toBe(1);
  });
});

describe("summaryColumns", () => {
  const labels = (policies: Record<string, unknown>) => summaryColumns(policies).map((c) => c[1]);
  it("shows a ratio column only when its reference policy was simulated", () => {
    expect(labels({ "static-group": {}, seer: {} })).not.toContain("Throughput vs verl");
    expect(labels({ "static-group": {}, seer: {} })).toContain("Throughput vs static-group");
    expect(labels({ verl: {}, seer: {} })).toEqual(expect.arrayContaining(["Throughput vs verl", "Tail vs verl"]));
    expect(labels({ seer: {} }).some((l) => l.includes(" vs "))).toBe(false);
  });
});

describe("timelineEnd", () => {
  const req = (start: number, finish: number) => ({ group: 0, index: 0, instance: 0, start_s: start, finish_s: finish,
    output_tokens: 1, finish_reason: "stop", policy_version: 0 }) as unknown as Trace["requests"][number];
  it("is the latest chunk end over every policy's trace, so their timelines share one x range", () => {
    const short = { requests: [req(0, 6.6)] } as Trace;
    const long = { requests: [req(0, 3), req(1, 7.9)] } as Trace;
    expect(timelineEnd([short, long])).toBe(7.9);
    expect(timelineEnd([])).toBe(0);
  });
});
