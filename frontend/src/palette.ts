// Distinct line colors, shared by every chart that draws one line per item.

/** Ten well-separated colors; indices past the palette get golden-angle hues. */
export const PALETTE = [
  "#2563eb", "#dc2626", "#059669", "#d97706", "#7c3aed",
  "#0891b2", "#db2777", "#65a30d", "#4b5563", "#ea580c",
];

/** Line color for index `i` (stable: the same index always gets the same color). */
export function paletteColor(i: number): string {
  const k = Math.abs(i);
  return k < PALETTE.length ? PALETTE[k] : `hsl(${Math.round((k * 137.508) % 360)}, 65%, 45%)`;
}

/** `color` (a #rrggbb or hsl(...) string from paletteColor) with opacity `alpha` in 0..1. */
export function withAlpha(color: string, alpha: number): string {
  if (color.startsWith("#") && color.length === 7) {
    const a = Math.round(Math.min(1, Math.max(0, alpha)) * 255);
    return color + a.toString(16).padStart(2, "0");
  }
  if (color.startsWith("hsl(")) return `hsla(${color.slice(4, -1)}, ${alpha})`;
  return color;
}
