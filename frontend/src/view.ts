// The compare page's view (runs, metrics, x axis, smoothing, reference run),
// read from and written back to the page URL's query string.
import type { CompareX } from "./types";

export const X_MODES: readonly CompareX[] = ["step", "wall", "relative"];
export const MAX_POINTS = 1500;
export const MAX_SMOOTH = 0.99;

export interface CompareView {
  /** Run ids as written in the URL, in order, without duplicates. */
  runs: string[];
  /** Requested metric names; null = the API's default set. */
  metrics: string[] | null;
  x: CompareX;
  /** EMA factor in 0..MAX_SMOOTH (two decimals); 0 = raw. */
  smooth: number;
  /** Reference run id; null = the API picks one. */
  ref: string | null;
}

/** The query params this page owns; every other param is kept as written. */
const MANAGED = ["x", "smooth", "ref", "metrics"] as const;
type Managed = (typeof MANAGED)[number];

/** encodeURIComponent, but keeps "," and "/" readable (run lists, metric names). */
export function encodeParam(value: string): string {
  return encodeURIComponent(value).replace(/%2C/gi, ",").replace(/%2F/gi, "/");
}

function decodeParam(raw: string): string {
  try {
    return decodeURIComponent(raw.replace(/\+/g, " "));
  } catch {
    return raw;
  }
}

/** The raw `key=value` parts of a query string, with their decoded key and value. */
function queryParts(search: string): { raw: string; key: string; value: string }[] {
  return search
    .replace(/^\?/, "")
    .split("&")
    .filter((raw) => raw !== "")
    .map((raw) => {
      const eq = raw.indexOf("=");
      const key = decodeParam(eq < 0 ? raw : raw.slice(0, eq));
      const value = eq < 0 ? "" : decodeParam(raw.slice(eq + 1));
      return { raw, key, value };
    });
}

/** Split comma-separated lists, trim, drop empties and duplicates (first one wins). */
function splitList(values: string[]): string[] {
  const seen = new Set<string>();
  for (const v of values) {
    for (const item of v.split(",")) {
      const s = item.trim();
      if (s) seen.add(s);
    }
  }
  return [...seen];
}

/** Clamp an EMA factor to 0..MAX_SMOOTH with two decimals; anything unparsable is 0. */
export function clampSmooth(value: number): number {
  if (!Number.isFinite(value) || value <= 0) return 0;
  return Math.round(Math.min(value, MAX_SMOOTH) * 100) / 100;
}

/**
 * Read the view from a query string. `runs` may be comma-separated, repeated
 * (`runs=1&runs=2`, as a GET form of checkboxes sends), or both.
 */
export function readView(search: string): CompareView {
  const parts = queryParts(search);
  const all = (key: string) => parts.filter((p) => p.key === key).map((p) => p.value);
  const last = (key: string) => all(key).pop()?.trim() || null;

  const metrics = splitList(all("metrics"));
  const x = last("x");
  return {
    runs: splitList(all("runs")),
    metrics: metrics.length > 0 ? metrics : null,
    x: X_MODES.includes(x as CompareX) ? (x as CompareX) : "step",
    smooth: clampSmooth(Number(last("smooth") ?? 0)),
    ref: last("ref"),
  };
}

/** The value of a managed param for `view`, or null when it is the default (left out). */
function managedValue(view: CompareView, key: Managed): string | null {
  switch (key) {
    case "x":
      return view.x === "step" ? null : view.x;
    case "smooth":
      return view.smooth > 0 ? String(view.smooth) : null;
    case "ref":
      return view.ref;
    case "metrics":
      return view.metrics && view.metrics.length > 0 ? view.metrics.join(",") : null;
  }
}

/**
 * `search` with the managed params set from `view`: each keeps the place of its
 * first occurrence (new ones go last), defaults are dropped, and every other
 * param (runs and the run picker's filters) stays exactly as written.
 */
export function writeView(search: string, view: CompareView): string {
  const out: string[] = [];
  const done = new Set<string>();
  const put = (key: Managed) => {
    done.add(key);
    const value = managedValue(view, key);
    if (value !== null) out.push(`${key}=${encodeParam(value)}`);
  };
  for (const part of queryParts(search)) {
    const key = MANAGED.find((k) => k === part.key);
    if (!key) out.push(part.raw);
    else if (!done.has(key)) put(key);
  }
  for (const key of MANAGED) if (!done.has(key)) put(key);
  return out.length > 0 ? `?${out.join("&")}` : "";
}

/** Replace the page URL (no new history entry) so that it reproduces `view`. */
export function replaceUrl(view: CompareView): void {
  const search = writeView(location.search, view);
  if (search !== location.search) {
    history.replaceState(history.state, "", location.pathname + search + location.hash);
  }
}

/** Query string (without "?") of the API and CSV requests for `view`. */
export function apiQuery(view: CompareView): string {
  const params: [string, string][] = [["runs", view.runs.join(",")]];
  if (view.metrics && view.metrics.length > 0) params.push(["metrics", view.metrics.join(",")]);
  params.push(["x", view.x], ["max_points", String(MAX_POINTS)]);
  if (view.ref) params.push(["reference", view.ref]);
  return params.map(([k, v]) => `${k}=${encodeParam(v)}`).join("&");
}

/** Parse the metrics text input ("a, b,c"): null when empty (= the API default). */
export function parseMetrics(text: string): string[] | null {
  const list = splitList([text]);
  return list.length > 0 ? list : null;
}
