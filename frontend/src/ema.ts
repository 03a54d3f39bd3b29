// Exponential moving average smoothing, as TensorBoard draws it.

/**
 * Smooth `y` with factor `alpha` (0 = unchanged, toward 1 = smoother):
 * s[i] = alpha·s[prev] + (1 − alpha)·y[i] over the non-null points only (nulls
 * stay null and don't reset the average), debiased by 1 − alpha^k after k
 * points so the curve starts at the data instead of at 0. Returns `y` itself
 * when alpha is 0.
 */
export function emaSmooth(y: readonly (number | null)[], alpha: number): (number | null)[] {
  if (!(alpha > 0)) return y as (number | null)[];
  const a = Math.min(alpha, 0.999);
  const out: (number | null)[] = new Array(y.length);
  let last = 0;
  let weight = 1; // alpha^k
  for (let i = 0; i < y.length; i++) {
    const v = y[i];
    if (v === null || !Number.isFinite(v)) {
      out[i] = null;
      continue;
    }
    last = a * last + (1 - a) * v;
    weight *= a;
    out[i] = last / (1 - weight);
  }
  return out;
}
