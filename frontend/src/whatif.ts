// Entry point of a what-if simulation page: polls the simulation until it ends (the title's
// state badge follows it), then draws a summary table (ratio columns only for the reference
// policies that ran), per-policy bars (throughput and tail time relative to static-group, else
// verl, else absolute), one latency-CDF overlay of every policy and each policy's instance-timeline band.
import "uplot/dist/uPlot.min.css";
import "./dashboard.css";
import { formatNumber, formatRatio } from "./format";
import { barChart, bandTimeline, cdfOverlay, timelineEnd } from "./whatif-charts";
import "./whatif.css";
import type { Trace } from "./types";

interface PolicyRow {
  rollout_time_s: number;
  throughput_tok_s: number;
  tail_time_s: number;
  idle_frac: number;
  migrations: number;
  reprefill_tokens: number;
  preemptions?: number;
  throughput_vs_verl?: number;
  tail_vs_verl?: number | null;
  throughput_vs_static?: number;
  tail_vs_static?: number | null;
}

interface SimulationResponse {
  state: string;
  error: string;
  results: {
    policies: Record<string, PolicyRow>;
    order?: string[];
    charts: Record<string, Trace>;
    workload: Record<string, unknown>;
  } | null;
}

type Column = [keyof PolicyRow, string, (v: number | null | undefined) => string];

/** A ratio's cell: "1.19×", "—" without one (a reference without a tail gives none). */
const ratioCell = (v: number | null | undefined) => formatRatio(v) || "—";

const COLUMNS: Column[] = [
  ["rollout_time_s", "Rollout (s)", formatNumber],
  ["throughput_tok_s", "Throughput (tok/s)", formatNumber],
  ["tail_time_s", "Tail (s)", formatNumber],
  ["idle_frac", "Idle frac", formatNumber],
  ["migrations", "Migrations", formatNumber],
  ["preemptions", "Preemptions", formatNumber],
];
// Ratio columns: [reference policy, its columns]; drawn only when the reference is in the result.
const RATIO_COLUMNS: [string, Column[]][] = [
  ["verl", [["throughput_vs_verl", "Throughput vs verl", ratioCell], ["tail_vs_verl", "Tail vs verl", ratioCell]]],
  ["static-group", [["throughput_vs_static", "Throughput vs static-group", ratioCell],
    ["tail_vs_static", "Tail vs static-group", ratioCell]]],
];

/** The table's columns: the plain ones, then the ratios to each reference policy that ran. */
export function summaryColumns(policies: Record<string, unknown>): Column[] {
  return [...COLUMNS, ...RATIO_COLUMNS.filter(([ref]) => ref in policies).flatMap(([, cols]) => cols)];
}

/** The results table; a "measured" row first when the workload is a run's trace. */
export function summaryTable(
  policies: Record<string, PolicyRow>,
  order: string[],
  measured: Record<string, number> | null,
): HTMLTableElement {
  const columns = summaryColumns(policies);
  const table = document.createElement("table");
  table.id = "whatif-summary";
  table.className = "table";
  const head = table.createTHead().insertRow();
  for (const label of ["Policy", ...columns.map((c) => c[1])]) {
    const th = document.createElement("th");
    th.scope = "col";
    th.textContent = label;
    if (label !== "Policy") th.className = "num";
    head.append(th);
  }
  const body = table.createTBody();
  const row = (name: string, label: string) => {
    const tr = body.insertRow();
    tr.dataset.policy = name;
    const th = document.createElement("th");
    th.scope = "row";
    th.textContent = label;
    tr.append(th);
    return tr;
  };
  const cell = (tr: HTMLTableRowElement, text: string) => {
    const td = tr.insertCell();
    td.className = "num";
    td.textContent = text;
  };
  if (measured) {
    const tr = row("measured", "measured (real run)");
    for (const [key] of columns) {
      const v = key === "rollout_time_s" ? measured["rollout/time_s"] : key === "throughput_tok_s"
        ? measured["rollout/throughput_tok_s"] : key === "tail_time_s" ? measured["rollout/tail_time_s"] : undefined;
      cell(tr, formatNumber(v));
    }
  }
  for (const name of order) {
    const r = policies[name];
    const tr = row(name, name);
    for (const [key, , fmt] of columns) cell(tr, fmt(r[key] as number | null | undefined));
  }
  return table;
}

/** The bar charts: throughput and tail time relative to static-group, else to verl, else as they are. */
function bars(grid: HTMLElement, policies: Record<string, PolicyRow>, names: string[]): void {
  const ref = "static-group" in policies ? "static-group" : "verl" in policies ? "verl" : null;
  if (ref === null) {
    barChart(grid, "Throughput (tok/s)", names, names.map((n) => policies[n].throughput_tok_s), false);
    barChart(grid, "Tail time (s)", names, names.map((n) => policies[n].tail_time_s), false);
    return;
  }
  const suffix = ref === "verl" ? "verl" : "static";
  const key = (what: string) => `${what}_vs_${suffix}` as keyof PolicyRow;
  barChart(grid, `Throughput vs ${ref}`, names, names.map((n) => (policies[n][key("throughput")] as number | null) ?? null), true);
  barChart(grid, `Tail time vs ${ref}`, names, names.map((n) => (policies[n][key("tail")] as number | null) ?? null), true);
}

function render(root: HTMLElement, sim: SimulationResponse, measured: Record<string, number> | null): void {
  const res = sim.results!;
  // the server's JSON (PostgreSQL jsonb) loses key order: "order" keeps the requested one
  const names = (res.order ?? Object.keys(res.policies)).filter((n) => n in res.policies);
  const grid = document.createElement("div");
  grid.className = "chart-grid bar-grid";
  const overlay = document.createElement("div");
  overlay.className = "chart-grid";
  const timelines = document.createElement("div");
  timelines.className = "chart-grid";
  const scroll = document.createElement("div");  // the wide table scrolls inside the page at 800 px
  Object.assign(scroll, { className: "table-scroll", tabIndex: 0 });
  scroll.setAttribute("role", "region");
  scroll.setAttribute("aria-label", "results per policy");
  scroll.append(summaryTable(res.policies, names, measured));
  root.append(scroll, grid, overlay, timelines);
  bars(grid, res.policies, names);
  const traced = names.filter((n) => res.charts[n]).map((n) => [n, res.charts[n]] as [string, Trace]);
  if (traced.length > 0) cdfOverlay(overlay, traced);
  const end = timelineEnd(traced.map(([, t]) => t));
  for (const [name, trace] of traced) bandTimeline(timelines, name, trace, end);
}

async function main(): Promise<void> {
  const host = document.getElementById("whatif");
  if (!host) return;
  const root = document.createElement("div");
  root.id = "dashboard";
  host.append(root);
  const measuredEl = document.getElementById("measured-data");
  const measured = measuredEl ? (JSON.parse(measuredEl.textContent || "null") as Record<string, number> | null) : null;
  const state = document.getElementById("sim-state");
  for (;;) {
    const resp = await fetch(host.dataset.url!, { headers: { Accept: "application/json" } });
    const sim = (await resp.json()) as SimulationResponse;
    if (state) {
      state.textContent = sim.state;
      state.className = `badge state-${sim.state}`;
    }
    if (sim.state === "done" && sim.results) {
      render(root, sim, measured);
      host.dataset.ready = "1";
      return;
    }
    if (sim.state === "failed") {
      const p = document.createElement("p");
      p.className = "errorlist";
      p.textContent = `The simulation failed: ${sim.error}`;
      root.append(p);
      host.dataset.ready = "1";
      return;
    }
    await new Promise((r) => setTimeout(r, 1500));
  }
}

if (typeof document !== "undefined") void main();  // not under the unit tests (node)
