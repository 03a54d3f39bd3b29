// Pure choices of the compare page (ours): which metrics get a chart, which summary columns are
// kept, which show a ratio, and how a summary cell names the metric it read.
import type { CompareResponse, SummaryColumnInfo } from "./types";

/** The metrics some selected run has points of (`charted`, in the given order) and the rest (`missing`). */
export function splitCharted(
  metrics: string[],
  series: CompareResponse["series"],
  runIds: number[],
): { charted: string[]; missing: string[] } {
  const charted: string[] = [];
  const missing: string[] = [];
  for (const metric of metrics) {
    const byRun = series[metric] ?? {};
    const has = runIds.some((id) => (byRun[String(id)]?.y?.length ?? 0) > 0);
    (has ? charted : missing).push(metric);
  }
  return { charted, missing };
}

/** The columns some run has a value in (a column empty for every selected run is left out). */
export function keptColumns(columns: SummaryColumnInfo[], runs: CompareResponse["runs"]): SummaryColumnInfo[] {
  return columns.filter(({ key }) => runs.some((run) => {
    const v = run.summary?.[key];
    return typeof v === "number" && Number.isFinite(v);
  }));
}

/**
 * Whether a column's cells show a ratio to the reference: only measures where higher or
 * lower is better (throughput, tail, latency, reward, accuracy), never counts (iterations).
 */
export function showsRatio(column: Pick<SummaryColumnInfo, "stat" | "better">): boolean {
  return column.stat !== "count" && column.better !== "none";
}

/** Short words for a metric a two-source column read: validation vs training accuracy. */
const SOURCE_WORDS: Record<string, { short: string; long: string }> = {
  "val/accuracy": { short: "val", long: "validation accuracy (val/accuracy)" },
  "reward/accuracy": { short: "train", long: "training accuracy (reward/accuracy): the run has no validation" },
};

/** How a cell names the metric it read (`sources[key]` of the API), or null when the column has one metric. */
export function sourceTag(metric: string | undefined): { short: string; long: string } | null {
  if (!metric) return null;
  return SOURCE_WORDS[metric] ?? { short: metric.split("/")[0], long: metric };
}

/** Grid class of a section of `n` charts: a lone chart spans the row. */
export function gridClass(n: number): string {
  return n === 1 ? "chart-grid lone" : "chart-grid";
}

/** "accept len (tokens/step) and train loss": the titles of the metrics left out, joined for a sentence. */
export function listTitles(titles: string[]): string {
  if (titles.length <= 1) return titles.join("");
  return `${titles.slice(0, -1).join(", ")} and ${titles[titles.length - 1]}`;
}

/** The concurrency warning (ours): compared runs that shared a cluster at the same time, and
 *  runs that shared theirs with runs outside the comparison; "" when none did. */
export function concurrencyText(pairs: [number, number][],
                                shared: Record<string, { runs: number[]; hidden: number }>): string {
  const parts = pairs.map(([a, b]) => `#${a} and #${b} shared a cluster at the same time`);
  for (const [run, { runs, hidden }] of Object.entries(shared)) {
    const named = runs.map((r) => `#${r}`);
    if (hidden) named.push(`${hidden} run${hidden === 1 ? "" : "s"} of other teams`);
    if (named.length) parts.push(`#${run} shared its cluster with ${named.join(", ")} while it ran`);
  }
  return parts.length ? `Ran concurrently: throughput ratios are not comparable (${parts.join("; ")}).` : "";
}
