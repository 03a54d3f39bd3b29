import { describe, expect, it } from "vitest";
import {
  MAX_POINTS,
  MAX_SMOOTH,
  X_MODES,
  apiQuery,
  clampSmooth,
  encodeParam,
  parseMetrics,
  readView,
  writeView,
  type CompareView,
} from "./view";

const DEFAULT: CompareView = { runs: [], metrics: null, x: "step", smooth: 0, ref: null };

describe("readView", () => {
  it("reads the defaults from an empty query", () => {
    expect(readView("")).toEqual(DEFAULT);
    expect(readView("?")).toEqual(DEFAULT);
  });

  it("reads runs comma-separated, repeated, or both, without duplicates or blanks", () => {
    expect(readView("?runs=1,2&runs=3&runs=2").runs).toEqual(["1", "2", "3"]);
    expect(readView("?runs=%201%20,,2").runs).toEqual(["1", "2"]);
    expect(readView("?runs=4%2C5").runs).toEqual(["4", "5"]);
  });

  it("reads metrics as a list, null when none is given", () => {
    expect(readView("?metrics=train/loss,reward/mean").metrics).toEqual(["train/loss", "reward/mean"]);
    expect(readView("?metrics=train%2Floss").metrics).toEqual(["train/loss"]);
    expect(readView("?metrics=").metrics).toBeNull();
    expect(readView("?metrics=,").metrics).toBeNull();
  });

  it("accepts only the known x modes, and the last one given wins", () => {
    for (const x of X_MODES) expect(readView(`?x=${x}`).x).toBe(x);
    expect(readView("?x=bogus").x).toBe("step");
    expect(readView("?x=wall&x=relative").x).toBe("relative");
  });

  it("clamps smoothing to 0..MAX_SMOOTH with two decimals", () => {
    expect(readView("?smooth=0.6").smooth).toBe(0.6);
    expect(readView("?smooth=0.456").smooth).toBe(0.46);
    expect(readView("?smooth=5").smooth).toBe(MAX_SMOOTH);
    expect(readView("?smooth=-1").smooth).toBe(0);
    expect(readView("?smooth=abc").smooth).toBe(0);
  });

  it("reads the reference run, null when blank", () => {
    expect(readView("?ref=7").ref).toBe("7");
    expect(readView("?ref=%20").ref).toBeNull();
  });

  it("decodes + as a space and keeps a malformed escape as written", () => {
    expect(readView("?metrics=a+b").metrics).toEqual(["a b"]);
    expect(readView("?ref=%E0%A4%A").ref).toBe("%E0%A4%A");
  });
});

describe("clampSmooth", () => {
  it("is 0 for anything not a positive finite number", () => {
    for (const v of [0, -0.1, NaN, Infinity, -Infinity]) expect(clampSmooth(v)).toBe(0);
  });

  it("rounds to two decimals and caps at MAX_SMOOTH", () => {
    expect(clampSmooth(0.123)).toBe(0.12);
    expect(clampSmooth(0.999)).toBe(MAX_SMOOTH);
    expect(clampSmooth(MAX_SMOOTH)).toBe(MAX_SMOOTH);
  });
});

describe("writeView", () => {
  it("drops the defaults", () => {
    expect(writeView("", DEFAULT)).toBe("");
    expect(writeView("?x=wall&smooth=0.5", DEFAULT)).toBe("");
  });

  it("keeps every param it does not own exactly as written, in place", () => {
    const search = "?runs=1,2&team=a%20b&x=wall&q=%7E";
    expect(writeView(search, { ...DEFAULT, runs: ["1", "2"], x: "relative" })).toBe(
      "?runs=1,2&team=a%20b&x=relative&q=%7E",
    );
  });

  it("puts a managed param where it first occurred, drops repeats, and adds new ones last", () => {
    const view: CompareView = { runs: ["1"], metrics: ["train/loss", "a b"], x: "wall", smooth: 0.3, ref: "9" };
    expect(writeView("?smooth=0.1&runs=1&smooth=0.2", view)).toBe(
      "?smooth=0.3&runs=1&x=wall&ref=9&metrics=train/loss,a%20b",
    );
  });

  it("writes what readView reads back", () => {
    const view: CompareView = { runs: ["3", "4"], metrics: ["reward/mean"], x: "relative", smooth: 0.85, ref: "4" };
    const search = writeView("?runs=3,4", view);
    expect(readView(search)).toEqual(view);
  });
});

describe("encodeParam", () => {
  it("keeps commas and slashes readable and escapes the rest", () => {
    expect(encodeParam("train/loss,reward/mean")).toBe("train/loss,reward/mean");
    expect(encodeParam("a b&c=d")).toBe("a%20b%26c%3Dd");
  });
});

describe("apiQuery", () => {
  it("asks for the runs, x and the point cap; metrics and reference only when set", () => {
    expect(apiQuery({ ...DEFAULT, runs: ["1", "2"] })).toBe(`runs=1,2&x=step&max_points=${MAX_POINTS}`);
    expect(apiQuery({ runs: ["1"], metrics: ["train/loss"], x: "wall", smooth: 0.5, ref: "1" })).toBe(
      `runs=1&metrics=train/loss&x=wall&max_points=${MAX_POINTS}&reference=1`,
    );
  });

  it("leaves smoothing out (it is drawn, not fetched)", () => {
    expect(apiQuery({ ...DEFAULT, runs: ["1"], smooth: 0.9 })).not.toContain("smooth");
  });
});

describe("parseMetrics", () => {
  it("splits on commas, trims and drops duplicates", () => {
    expect(parseMetrics("a, b,c ,a")).toEqual(["a", "b", "c"]);
  });

  it("is null for empty text (the API's default set)", () => {
    expect(parseMetrics("")).toBeNull();
    expect(parseMetrics(" , ")).toBeNull();
  });
});
