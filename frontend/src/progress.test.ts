import { describe, expect, it } from "vitest";
import { formatDuration, progressOf, progressText } from "./progress";

describe("progressOf", () => {
  it("gives percent and an ETA at the mean iteration time while running", () => {
    const p = progressOf([10, 20, 30], 10, "running");
    expect(p.done).toBe(3);
    expect(p.percent).toBeCloseTo(30);
    expect(p.etaS).toBeCloseTo(7 * 20);
    expect(progressText(p)).toBe("3 of 10 iterations · ETA 2m 20s");
  });
  it("has no ETA before the first iteration or once ended", () => {
    expect(progressOf([], 10, "running").etaS).toBeNull();
    expect(progressOf([5], 10, "failed").etaS).toBeNull();
    expect(progressOf([5], 10, "succeeded").percent).toBe(100);
    expect(progressOf([5, 5], null, "running").percent).toBe(0);
  });
});

describe("formatDuration", () => {
  it("reads like the runs table", () => {
    expect(formatDuration(7)).toBe("7s");
    expect(formatDuration(95)).toBe("1m 35s");
    expect(formatDuration(3725)).toBe("1h 02m");
    expect(formatDuration(90000)).toBe("1d 01h");
    expect(formatDuration(null)).toBe("—");
  });
});
