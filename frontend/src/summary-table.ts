// The #summary table: one row per run, each summary value with its ratio to the reference run.
import { formatCount, formatNumber, formatWithRatio } from "./format";
import type { CompareResponse } from "./types";

/** +1: higher is better, -1: lower is better, 0: neither. */
type Better = 1 | -1 | 0;

/** Summary columns of GET /api/compare/: key, header, formatter, which direction is better. */
export const SUMMARY_COLUMNS: [key: string, title: string, format: (v: number | null | undefined) => string, better: Better][] = [
  ["throughput_tok_s", "throughput tok/s (median)", formatNumber, 1],
  ["tail_time_s", "tail time s (median)", formatNumber, -1],
  ["accept_len", "accept len (median)", formatNumber, 1],
  ["reward", "reward (final)", formatNumber, 1],
  ["accuracy", "accuracy (final)", formatNumber, 1],
  ["iterations", "iterations", formatCount, 0],
];

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

/** Fill `table` from `data`; `colors[i]` is the chart color of `data.runs[i]`. */
export function renderSummary(table: HTMLTableElement, data: CompareResponse, colors: string[]): void {
  const head = document.createElement("tr");
  // The run label already names team, experiment and policy.
  head.append(cell("th", "run"), cell("th", "state"));
  for (const [key, title] of SUMMARY_COLUMNS) {
    const th = cell("th", title, "num");
    th.dataset.col = key;
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

    for (const [key, , format, better] of SUMMARY_COLUMNS) {
      const value = run.summary?.[key];
      const ratio = run.ratios?.[key];
      const td = cell("td", formatWithRatio(value, ratio, format), "num");
      td.dataset.col = key;
      // Color a ratio that differs visibly (by 0.5% or more) from the reference.
      if (better !== 0 && typeof ratio === "number" && !isRef && Math.abs(ratio - 1) >= 0.005) {
        td.classList.add((ratio > 1) === (better > 0) ? "better" : "worse");
      }
      tr.append(td);
    }
    tbody.append(tr);
  });
  table.replaceChildren(thead, tbody);
}
