import { describe, expect, it } from "vitest";
import { yRange } from "./charts";

describe("yRange", () => {
  it("keeps a constant zero (reward, accuracy) on 0..1, not uPlot's 0..100", () => {
    expect(yRange(0, 0)).toEqual([0, 1]);
    expect(yRange(null, null)).toEqual([0, 1]);
  });
  it("pads a constant value by 10% and a spread like uPlot does", () => {
    expect(yRange(50, 50)).toEqual([45, 55]);
    const [lo, hi] = yRange(0.2, 0.8);
    expect(lo).toBeLessThanOrEqual(0.2);
    expect(hi).toBeGreaterThanOrEqual(0.8);
    expect(hi - lo).toBeLessThan(1);
  });
});
