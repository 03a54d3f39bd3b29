import { describe, expect, it } from "vitest";
import { MISSING, formatCount, formatNumber, formatRatio, formatWithRatio, tickLabels, yAxis } from "./format";

describe("formatNumber", () => {
  it("shows about 3–4 significant digits", () => {
    expect(formatNumber(231)).toBe("231.0");
    expect(formatNumber(12.345)).toBe("12.35");
    expect(formatNumber(0.31234)).toBe("0.312");
    expect(formatNumber(-5.5)).toBe("-5.50");
  });

  it("switches to exponent notation for very large and very small values", () => {
    expect(formatNumber(1234567)).toBe("1.23e+6");
    expect(formatNumber(0.0001234)).toBe("1.23e-4");
    expect(formatNumber(0.001)).toBe("0.00100");
    expect(formatNumber(999999)).toBe("999999.0");
  });

  it("writes zero as 0", () => {
    expect(formatNumber(0)).toBe("0");
    expect(formatNumber(-0)).toBe("0");
  });

  it("shows a dash for null, undefined and non-finite values", () => {
    for (const v of [null, undefined, NaN, Infinity, -Infinity]) expect(formatNumber(v)).toBe(MISSING);
    expect(MISSING).toBe("—");
  });
});

describe("formatCount", () => {
  it("rounds to an integer", () => {
    expect(formatCount(3)).toBe("3");
    expect(formatCount(2.6)).toBe("3");
    expect(formatCount(0)).toBe("0");
  });

  it("shows a dash for null, undefined and non-finite values", () => {
    for (const v of [null, undefined, NaN, Infinity]) expect(formatCount(v)).toBe(MISSING);
  });
});

describe("formatRatio", () => {
  it("writes two decimals and a times sign", () => {
    expect(formatRatio(1.0234)).toBe("1.02×");
    expect(formatRatio(0.5)).toBe("0.50×");
  });

  it("is empty without a ratio", () => {
    for (const r of [null, undefined, NaN, Infinity]) expect(formatRatio(r)).toBe("");
  });
});

describe("formatWithRatio", () => {
  it("appends the ratio in parentheses", () => {
    expect(formatWithRatio(231, 1.02)).toBe("231.0 (1.02×)");
  });

  it("leaves the ratio out when there is none, and shows only a dash without a value", () => {
    expect(formatWithRatio(231, null)).toBe("231.0");
    expect(formatWithRatio(null, 1.02)).toBe(MISSING);
    expect(formatWithRatio(undefined, undefined)).toBe(MISSING);
  });

  it("formats the value with the given formatter", () => {
    expect(formatWithRatio(2.6, 2, formatCount)).toBe("3 (2.00×)");
  });
});

describe("tickLabels", () => {
  it("gives a narrow range enough decimals that no label repeats", () => {
    const splits = [6.0681, 6.0682, 6.0683, 6.0684];
    const labels = tickLabels(splits, 0.0001);
    expect(labels).toEqual(["6.0681", "6.0682", "6.0683", "6.0684"]);
    expect(new Set(labels).size).toBe(splits.length);
  });

  it("shows whole numbers without decimals when the step is 1 or more", () => {
    expect(tickLabels([0, 10, 20], 10)).toEqual(["0", "10", "20"]);
    expect(tickLabels([0, 0.5, 1], 0.5)).toEqual(["0.0", "0.5", "1.0"]);
  });

  it("uses exponents for tiny and huge magnitudes, with digits for the step", () => {
    expect(tickLabels([0, 1e-5, 2e-5], 1e-5)).toEqual(["0", "1.0e-5", "2.0e-5"]);
    const kl = tickLabels([1.1e-5, 1.2e-5, 1.3e-5], 1e-7);
    expect(new Set(kl).size).toBe(3);
    expect(kl[0]).toMatch(/e-5$/);
    expect(tickLabels([2e6, 4e6], 2e6)).toEqual(["2.0e+6", "4.0e+6"]);
  });

  it("copes with a zero step and all-zero splits", () => {
    expect(tickLabels([0], 0)).toEqual(["0"]);
    expect(tickLabels([5, 5], 0)).toEqual(["5", "5"]);
  });
});

describe("yAxis", () => {
  it("keeps the size and labels ticks with tickLabels", () => {
    const axis = yAxis(60);
    expect(axis.size).toBe(60);
    expect(axis.values(null, [1, 1.5, 2], 0, 0, 0.5)).toEqual(tickLabels([1, 1.5, 2], 0.5));
  });
});
