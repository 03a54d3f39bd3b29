import { describe, expect, it } from "vitest";
import { emaSmooth } from "./ema";

describe("emaSmooth", () => {
  it("returns y itself when alpha is 0 (or not a positive number)", () => {
    const y = [1, null, 3];
    expect(emaSmooth(y, 0)).toBe(y);
    expect(emaSmooth(y, -0.5)).toBe(y);
    expect(emaSmooth(y, NaN)).toBe(y);
  });

  it("starts at the data, not at 0 (debiased)", () => {
    expect(emaSmooth([4, 4, 4], 0.9)).toEqual([4, 4, 4].map((v) => expect.closeTo(v, 12)));
    expect(emaSmooth([10], 0.6)[0]).toBeCloseTo(10, 12);
  });

  it("follows s = alpha·s_prev + (1 − alpha)·y, divided by 1 − alpha^k", () => {
    const a = 0.5;
    const s1 = (1 - a) * 2;
    const s2 = a * s1 + (1 - a) * 6;
    const out = emaSmooth([2, 6], a);
    expect(out[0]).toBeCloseTo(s1 / (1 - a), 12);
    expect(out[1]).toBeCloseTo(s2 / (1 - a * a), 12);
  });

  it("keeps nulls and non-finite values null without resetting the average", () => {
    const withGaps = emaSmooth([2, null, NaN, 6], 0.5);
    const without = emaSmooth([2, 6], 0.5);
    expect(withGaps[1]).toBeNull();
    expect(withGaps[2]).toBeNull();
    expect(withGaps[0]).toBeCloseTo(without[0] as number, 12);
    expect(withGaps[3]).toBeCloseTo(without[1] as number, 12);
  });

  it("caps alpha below 1 so that the curve still moves", () => {
    expect(emaSmooth([0, 100], 1)).toEqual(emaSmooth([0, 100], 0.999));
    expect(emaSmooth([0, 100], 5)[1]).toBeGreaterThan(0);
  });

  it("smooths a step: between the old and the new level, nearer the old one for larger alpha", () => {
    const soft = emaSmooth([0, 0, 0, 10], 0.3)[3] as number;
    const hard = emaSmooth([0, 0, 0, 10], 0.9)[3] as number;
    expect(soft).toBeGreaterThan(hard);
    expect(hard).toBeGreaterThan(0);
    expect(soft).toBeLessThan(10);
  });

  it("does not change its input and keeps its length", () => {
    const y = [1, null, 3];
    const out = emaSmooth(y, 0.5);
    expect(y).toEqual([1, null, 3]);
    expect(out).toHaveLength(3);
    expect(out).not.toBe(y);
  });
});
