// Put several runs' series, each with its own x values, on one shared x array
// (the layout uPlot needs): the sorted union of all x, null where a run has no point.
import type { XYSeries } from "./types";

export interface Aligned {
  /** Sorted, distinct x values of every series. */
  x: number[];
  /** One array per input series, as long as `x`; null where that series has no point. */
  ys: (number | null)[][];
  /** Finite y points per series (what each line actually draws). */
  counts: number[];
}

/** Indices of `xs` ordered by x (identity when already sorted, the usual case). */
function order(xs: ArrayLike<number>): ArrayLike<number> {
  const n = xs.length;
  let sorted = true;
  for (let i = 1; i < n && sorted; i++) sorted = xs[i - 1] <= xs[i];
  const idx = new Uint32Array(n);
  for (let i = 0; i < n; i++) idx[i] = i;
  return sorted ? idx : idx.sort((a, b) => xs[a] - xs[b]);
}

/**
 * Align `series` (a missing one counts as empty) on the union of their x values.
 * Points with a non-finite x are dropped, non-finite y become null; when a series
 * has two points at the same x, the later one wins. O(total points · log).
 */
export function alignSeries(series: (XYSeries | undefined)[]): Aligned {
  let total = 0;
  for (const s of series) total += s ? Math.min(s.x.length, s.y.length) : 0;

  // Union of x: collect, sort numerically (typed array), drop duplicates.
  const all = new Float64Array(total);
  let n = 0;
  for (const s of series) {
    if (!s) continue;
    const len = Math.min(s.x.length, s.y.length);
    for (let i = 0; i < len; i++) {
      const x = s.x[i];
      if (Number.isFinite(x)) all[n++] = x;
    }
  }
  const sortedAll = all.subarray(0, n).sort();
  const x: number[] = [];
  for (let i = 0; i < n; i++) if (i === 0 || sortedAll[i] !== sortedAll[i - 1]) x.push(sortedAll[i]);

  // Each series: walk its points in x order alongside the union.
  const ys: (number | null)[][] = [];
  const counts: number[] = [];
  for (const s of series) {
    const y: (number | null)[] = new Array(x.length).fill(null);
    let count = 0;
    if (s) {
      const len = Math.min(s.x.length, s.y.length);
      const idx = order(s.x.length === len ? s.x : s.x.slice(0, len));
      let j = 0;
      for (let k = 0; k < len; k++) {
        const i = idx[k];
        const xi = s.x[i];
        if (!Number.isFinite(xi)) continue;
        while (x[j] < xi) j++;
        const yi = s.y[i];
        const value = typeof yi === "number" && Number.isFinite(yi) ? yi : null;
        if (value !== null && y[j] === null) count++;
        else if (value === null && y[j] !== null) count--;
        y[j] = value;
      }
    }
    ys.push(y);
    counts.push(count);
  }
  return { x, ys, counts };
}
