// The team's runs table (ours), pure part: which cells a live "run_row" message changes.
import { formatNumber } from "./format";
import { formatDuration } from "./progress";
import type { RunRowMessage } from "./types";

/** Table cell (`data-cell`) of each key number's metric, as in telemetry.run_table.KEY_NUMBERS. */
export const CELL_OF_METRIC: Record<string, string> = {
  "rollout/throughput_tok_s": "throughput",
  "rollout/tail_time_s": "tail",
  "reward/mean": "reward",
  "reward/accuracy": "accuracy",
};
/** The accuracy cell shows validation accuracy once a run has it (marked "val"), else training's. */
export const VAL_ACCURACY = "val/accuracy";

/** `{cell: text}` to write into the run's row for `msg` (state, iterations done, numbers).
 *  `showsVal`: the row's accuracy cell already shows validation accuracy, which training
 *  accuracy must not overwrite; a validation value is returned as `val_accuracy`. */
export function rowUpdates(msg: RunRowMessage, showsVal = false): Record<string, string> {
  const out: Record<string, string> = {};
  if (msg.state) out.state = msg.state;
  if (msg.iterations_done != null) out.done = String(msg.iterations_done);
  for (const [metric, value] of Object.entries(msg.values ?? {})) {
    const cell = CELL_OF_METRIC[metric];
    if (cell === "accuracy" && (showsVal || msg.values[VAL_ACCURACY] != null)) continue;
    if (cell) out[cell] = formatNumber(value);
  }
  const val = msg.values?.[VAL_ACCURACY];
  if (val != null) out.val_accuracy = formatNumber(val);
  return out;
}

/** Percentage of `done` iterations out of `total` (0 when unknown), capped at 100. */
export function percentDone(done: number, total: number, state: string): number {
  if (state === "succeeded") return 100;
  return total > 0 ? Math.min(100, (100 * done) / total) : 0;
}

/** The ETA text after "x of N" (" · ETA 4m 10s"), or "" unless running with an iteration
 *  done; `meanS` is the mean iteration time the page was drawn with (the server's ETA). */
export function etaText(total: number, done: number, meanS: number | null, state: string): string {
  if (state !== "running" || !meanS || !(total > 0) || done <= 0) return "";
  return ` · ETA ${formatDuration(Math.max(total - done, 0) * meanS)}`;
}

/** The Duration cell: start to finish, or to `nowS` while not finished ("—" before the start). */
export function durationText(startedS: number | null, finishedS: number | null, nowS: number): string {
  if (startedS == null) return "—";
  return formatDuration((finishedS ?? nowS) - startedS);
}

/** The note over the table when runs it does not list changed: "Run #12 changed and is not
 *  listed here." / "3 runs not listed here changed (#12, #13, #14)." */
export function unlistedText(runs: number[]): string {
  const ids = [...runs].sort((a, b) => a - b).map((r) => `#${r}`);
  return ids.length === 1 ? `Run ${ids[0]} changed and is not listed here.`
    : `${ids.length} runs not listed here changed (${ids.slice(0, 5).join(", ")}${ids.length > 5 ? ", …" : ""}).`;
}
