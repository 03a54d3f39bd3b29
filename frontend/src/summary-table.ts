// The #summary table: one row per run, each summary value with its ratio to the reference run.
// Columns (key, heading, which way is better) come from the page's metric catalogue; a column no
// selected run has a value in is left out, and counts (iterations) get no ratio.
import { keptColumns, showsRatio, sourceTag } from "./compare-layout";
import { formatCount, formatNumber, formatWithRatio } from "./format";
import type { CompareResponse, SummaryColumnInfo } from "./types";

/** A run of the answer with `sources`: `{column: metric read}` for two-metric columns (accuracy). */
type RunWithSources = CompareResponse["runs"][number] & { sources?: Record<string, string> };

/** Columns when the page has no catalogue: the API's keys, unformatted headings, no colouring. */
function fallbackColumns(data: CompareResponse): SummaryColumnInfo[] {
  const keys = Object.keys(data.runs[0]?.summary ?? {});
  return keys.map((key) => ({ key, metric: "", stat: "last", title: key, heading: key, better: "none" }));
}

function cell(tag: "td" | "th", text: string, className?: string): HTMLTableCellElement {
  const el = document.createElement(tag);
  el.textContent = text;
  if (className) el.className = className;
  return el;
}

/** Only same-origin paths become links (never a javascript: or foreign URL). */
function safeHref(url: unknown): string | null {
  return typeof url === "string" && url.startsWith("/") && !url.startsWith("//") ? url : null;
}

/**
 * Fill `table` from `data`; `colors[i]` is the chart color of `data.runs[i]`; `columns`:
 * the summary columns of the catalogue (the API's keys when empty).
 */
export function renderSummary(
  table: HTMLTableElement,
  data: CompareResponse,
  colors: string[],
  columns: SummaryColumnInfo[],
): void {
  const shown = keptColumns(columns.length > 0 ? columns : fallbackColumns(data), data.runs);
  const head = document.createElement("tr");
  // The run label already names team, experiment and policy.
  head.append(cell("th", "run"), cell("th", "state"));
  for (const { key, heading, metric } of shown) {
    const th = cell("th", heading, "num");
    th.dataset.col = key;
    if (metric) th.title = metric;
    // A two-metric column: its heading's tooltip names what each tag means.
    const read = [...new Set(data.runs.map((run) => (run as RunWithSources).sources?.[key]).filter(Boolean))];
    if (read.length > 0) th.title = read.map((m) => sourceTag(m)?.long ?? m).join("; ");
    head.append(th);
  }
  const thead = document.createElement("thead");
  thead.append(head);

  const tbody = document.createElement("tbody");
  data.runs.forEach((run, i) => {
    const tr = document.createElement("tr");
    tr.dataset.runId = String(run.id);
    const isRef = run.id === data.reference;
    if (isRef) tr.classList.add("reference");

    const name = document.createElement("td");
    name.className = "run";
    const swatch = document.createElement("span");
    swatch.className = "swatch";
    swatch.style.background = colors[i];
    const href = safeHref(run.url);
    const label = document.createElement(href ? "a" : "span");
    if (href) (label as HTMLAnchorElement).href = href;
    label.textContent = run.label || `#${run.id}`;
    name.append(swatch, label);
    if (isRef) {
      const badge = document.createElement("span");
      badge.className = "ref-badge";
      badge.textContent = "reference";
      name.append(" ", badge);
    }
    tr.append(name, cell("td", run.state ?? ""));

    for (const column of shown) {
      const { key, stat, better } = column;
      const value = run.summary?.[key];
      const ratio = columns.length === 0 || showsRatio(column) ? run.ratios?.[key] : null;
      const td = cell("td", formatWithRatio(value, ratio, stat === "count" ? formatCount : formatNumber), "num");
      td.dataset.col = key;
      // A two-metric column says which it read: "val" (validation) or "train" accuracy.
      const tag = value == null ? null : sourceTag((run as RunWithSources).sources?.[key]);
      if (tag) {
        const small = document.createElement("span");
        small.className = "source";
        small.textContent = tag.short;
        small.title = tag.long;
        td.dataset.source = tag.short;
        td.prepend(small, " ");
      }
      // Color a ratio that differs visibly (by 0.5% or more) from the reference.
      if (better !== "none" && typeof ratio === "number" && !isRef && Math.abs(ratio - 1) >= 0.005) {
        td.classList.add((ratio > 1) === (better === "higher") ? "better" : "worse");
      }
      tr.append(td);
    }
    tbody.append(tr);
  });
  table.replaceChildren(thead, tbody);
}
