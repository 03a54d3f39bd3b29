import { describe, expect, it } from "vitest";
import { cdfOverlayData, occupancyBand } from "./whatif-charts";
import type { Trace } from "./types";

describe("occupancyBand", () => {
  it("gives min, median and max across instances at each x", () => {
    expect(occupancyBand([[3, 1, 0], [1, 1, 0], [2, 0, 0]], 3)).toEqual([[1, 0, 0], [2, 1, 0], [3, 1, 0]]);
    expect(occupancyBand([[4], [1]], 1)).toEqual([[1], [2.5], [4]]); // even count: mean of the middle two
    expect(occupancyBand([], 2)).toEqual([[0, 0], [0, 0], [0, 0]]);
  });
});

describe("cdfOverlayData", () => {
  it("puts every policy's CDF on one shared x, null where a policy has no point", () => {
    const req = (start: number, finish: number) => ({ start_s: start, finish_s: finish }) as Trace["requests"][number];
    const a = { iteration: 0, requests: [req(0, 1), req(0, 3)] } as Trace;
    const b = { iteration: 0, requests: [req(0, 2)] } as Trace;
    expect(cdfOverlayData([["a", a], ["b", b]])).toEqual([[1, 2, 3], [0.5, null, 1], [null, 1, null]]);
  });
});
