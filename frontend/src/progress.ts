// Progress and ETA of a run from its iteration times (ours; `umbra show` computes the same).

export const LIVE_STATES = new Set(["queued", "dispatching", "running"]);

export interface Progress {
  done: number;
  total: number | null;
  /** 0..100 */
  percent: number;
  /** Seconds left at the mean iteration time so far; null unless running with one iteration done. */
  etaS: number | null;
}

/** Progress from the iteration times logged so far (`iteration/time_s` values). */
export function progressOf(iterationTimes: number[], total: number | null, state: string): Progress {
  const done = iterationTimes.length;
  const percent = state === "succeeded" ? 100 : total && total > 0 ? Math.min(100, (100 * done) / total) : 0;
  let etaS: number | null = null;
  if (state === "running" && total && done > 0) {
    const mean = iterationTimes.reduce((a, b) => a + b, 0) / done;
    etaS = Math.max(total - done, 0) * mean;
  }
  return { done, total, percent, etaS };
}

/** 3725 -> "1h 02m", 95 -> "1m 35s", 7 -> "7s" (as the runs table's `duration` filter). */
export function formatDuration(seconds: number | null | undefined): string {
  if (seconds == null || !Number.isFinite(seconds)) return "—";
  const s = Math.max(0, Math.round(seconds));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const r = s % 60;
  if (h >= 24) return `${Math.floor(h / 24)}d ${String(h % 24).padStart(2, "0")}h`;
  if (h) return `${h}h ${String(m).padStart(2, "0")}m`;
  return m ? `${m}m ${String(r).padStart(2, "0")}s` : `${r}s`;
}

/** The progress line: "iteration 3 of 20 · ETA 4m 10s". */
export function progressText(p: Progress): string {
  const of = p.total ? ` of ${p.total}` : "";
  const eta = p.etaS != null ? ` · ETA ${formatDuration(p.etaS)}` : "";
  return `${p.done}${of} iterations${eta}`;
}
