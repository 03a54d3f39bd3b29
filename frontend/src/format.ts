// Number formatting for tables and chart legends.

export const MISSING = "—";

/**
 * A readable measurement, about 3–4 significant digits (231.0, 12.35, 0.312);
 * null / non-finite → "—".
 */
export function formatNumber(v: number | null | undefined): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return MISSING;
  const abs = Math.abs(v);
  if (abs === 0) return "0";
  if (abs >= 1e6 || abs < 1e-3) return v.toExponential(2);
  if (abs >= 100) return v.toFixed(1);
  if (abs >= 1) return v.toFixed(2);
  return v.toPrecision(3);
}

/** A count (iterations): rounded to an integer; null / non-finite → "—". */
export function formatCount(v: number | null | undefined): string {
  return v === null || v === undefined || !Number.isFinite(v) ? MISSING : String(Math.round(v));
}

/** A ratio to the reference run, e.g. "1.02×"; null → "". */
export function formatRatio(r: number | null | undefined): string {
  return r === null || r === undefined || !Number.isFinite(r) ? "" : `${r.toFixed(2)}×`;
}

/** A value with its ratio: "231.0 (1.02×)", "231.0" without a ratio, "—" without a value. */
export function formatWithRatio(
  v: number | null | undefined,
  r: number | null | undefined,
  format: (v: number | null | undefined) => string = formatNumber,
): string {
  const value = format(v);
  const ratio = formatRatio(r);
  return value === MISSING || ratio === "" ? value : `${value} (${ratio})`;
}

/**
 * uPlot y-axis tick labels with as many digits as the tick increment needs, so that a
 * narrow range (an entropy of 6.0681…6.0684, a KL of 1e-5) never shows one label repeated.
 */
export function tickLabels(splits: number[], incr: number): string[] {
  const mag = Math.max(0, ...splits.map((v) => Math.abs(v)));
  const step = Math.abs(incr) || mag || 1;
  if (mag !== 0 && (mag >= 1e6 || mag < 1e-3)) {
    const digits = Math.min(6, Math.max(1, Math.ceil(Math.log10(mag / step)) + 1));
    return splits.map((v) => (v === 0 ? "0" : v.toExponential(digits - 1)));
  }
  const decimals = Math.min(10, Math.max(0, -Math.floor(Math.log10(step) + 1e-9)));
  return splits.map((v) => v.toFixed(decimals));
}

/** A y axis whose labels follow `tickLabels`. */
export function yAxis(size: number): { size: number; values: (u: unknown, splits: number[], axis: number, space: number, incr: number) => string[] } {
  return { size, values: (_u, splits, _axis, _space, incr) => tickLabels(splits, incr) };
}
