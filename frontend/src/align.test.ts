import { describe, expect, it } from "vitest";
import { alignSeries } from "./align";

describe("alignSeries", () => {
  it("puts every series on the sorted union of x, null where a run has no point", () => {
    const a = alignSeries([
      { x: [1, 3], y: [10, 30] },
      { x: [2, 3, 4], y: [20, 31, 40] },
    ]);
    expect(a.x).toEqual([1, 2, 3, 4]);
    expect(a.ys).toEqual([
      [10, null, 30, null],
      [null, 20, 31, 40],
    ]);
    expect(a.counts).toEqual([2, 3]);
  });

  it("sorts a series given out of x order", () => {
    const a = alignSeries([{ x: [5, 1, 3], y: [50, 10, 30] }]);
    expect(a.x).toEqual([1, 3, 5]);
    expect(a.ys[0]).toEqual([10, 30, 50]);
  });

  it("sorts x numerically, not as text", () => {
    expect(alignSeries([{ x: [10, 9, 100], y: [1, 2, 3] }]).x).toEqual([9, 10, 100]);
  });

  it("counts a missing series as empty", () => {
    const a = alignSeries([undefined, { x: [1], y: [2] }]);
    expect(a.x).toEqual([1]);
    expect(a.ys).toEqual([[null], [2]]);
    expect(a.counts).toEqual([0, 1]);
  });

  it("drops points with a non-finite x", () => {
    const a = alignSeries([{ x: [NaN, 1, Infinity, -Infinity], y: [1, 2, 3, 4] }]);
    expect(a.x).toEqual([1]);
    expect(a.ys[0]).toEqual([2]);
    expect(a.counts).toEqual([1]);
  });

  it("turns non-finite y into null and does not count it", () => {
    const a = alignSeries([{ x: [1, 2, 3, 4], y: [NaN, null, Infinity, 7] }]);
    expect(a.ys[0]).toEqual([null, null, null, 7]);
    expect(a.counts).toEqual([1]);
  });

  it("lets the later of two points at one x win, counting it once", () => {
    expect(alignSeries([{ x: [1, 1], y: [5, 6] }])).toEqual({ x: [1], ys: [[6]], counts: [1] });
    // a later null replaces an earlier value: nothing is drawn there
    expect(alignSeries([{ x: [1, 1], y: [5, null] }])).toEqual({ x: [1], ys: [[null]], counts: [0] });
    // a later value replaces an earlier null
    expect(alignSeries([{ x: [1, 1], y: [null, 5] }])).toEqual({ x: [1], ys: [[5]], counts: [1] });
  });

  it("reads only as many points as the shorter of x and y", () => {
    const a = alignSeries([{ x: [1, 2, 3], y: [10] }, { x: [4], y: [40, 50] }]);
    expect(a.x).toEqual([1, 4]);
    expect(a.ys).toEqual([
      [10, null],
      [null, 40],
    ]);
  });

  it("aligns nothing to nothing", () => {
    expect(alignSeries([])).toEqual({ x: [], ys: [], counts: [] });
    expect(alignSeries([{ x: [], y: [] }])).toEqual({ x: [], ys: [[]], counts: [0] });
  });

  it("keeps every y array as long as x", () => {
    const a = alignSeries([{ x: [0, 2], y: [1, 1] }, { x: [1], y: [1] }, undefined]);
    for (const y of a.ys) expect(y).toHaveLength(a.x.length);
  });
});
