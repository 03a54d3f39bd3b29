// Entry point of a what-if simulation page: polls the simulation until it ends, then
// draws per-policy bars (throughput and tail time relative to static-group), a summary
// table, one latency-CDF overlay of every policy and each policy's instance-timeline band.
import "uplot/dist/uPlot.min.css";
import "./dashboard.css";
import uPlot from "uplot";
import { CHART_HEIGHT, chartSection, fitWidth } from "./charts";
import { formatNumber, formatRatio } from "./format";
import { paletteColor } from "./palette";
import { bandTimeline, cdfOverlay } from "./whatif-charts";
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

const COLUMNS: [keyof PolicyRow, string, (v: number | null | undefined) => string][] = [
  ["rollout_time_s", "rollout s", formatNumber],
  ["throughput_tok_s", "tok/s", formatNumber],
  ["tail_time_s", "tail s", formatNumber],
  ["idle_frac", "idle frac", formatNumber],
  ["migrations", "migrations", formatNumber],
  ["preemptions", "preemptions", formatNumber],
  ["throughput_vs_verl", "throughput vs verl", formatRatio],
  ["tail_vs_verl", "tail vs verl", formatRatio],
  ["throughput_vs_static", "throughput vs static", formatRatio],
  ["tail_vs_static", "tail vs static", formatRatio],
];

/** The results table; a "measured" row first when the workload is a run's trace. */
export function summaryTable(
  policies: Record<string, PolicyRow>,
  order: string[],
  measured: Record<string, number> | null,
): HTMLTableElement {
  const table = document.createElement("table");
  table.id = "whatif-summary";
  const head = table.insertRow();
  for (const label of ["policy", ...COLUMNS.map((c) => c[1])]) {
    const th = document.createElement("th");
    th.textContent = label;
    head.append(th);
  }
  if (measured) {
    const tr = table.insertRow();
    tr.dataset.policy = "measured";
    tr.insertCell().textContent = "measured (real run)";
    for (const [key] of COLUMNS) {
      const v = key === "rollout_time_s" ? measured["rollout/time_s"] : key === "throughput_tok_s"
        ? measured["rollout/throughput_tok_s"] : key === "tail_time_s" ? measured["rollout/tail_time_s"] : undefined;
      tr.insertCell().textContent = formatNumber(v);
    }
  }
  for (const name of order) {
    const row = policies[name];
    const tr = table.insertRow();
    tr.dataset.policy = name;
    tr.insertCell().textContent = name;
    for (const [key, , fmt] of COLUMNS) tr.insertCell().textContent = fmt(row[key] as number | null | undefined);
  }
  return table;
}

/** A bar's policy name, broken after its first hyphen when long ("seer-no-spec" -> "seer-\nno-spec"),
 * so that neighbouring labels do not overlap. */
export function barLabel(name: string): string {
  const cut = name.indexOf("-");
  return name.length > 10 && cut > 0 ? `${name.slice(0, cut + 1)}\n${name.slice(cut + 1)}` : name;
}

/** Bars of one value per policy (x = policy index). */
function barChart(parent: HTMLElement, title: string, names: string[], values: number[]): void {
  const { section, plot } = chartSection(title);
  section.classList.add("bars");
  parent.append(section);
  const bars = uPlot.paths.bars!({ size: [0.6, 80] });
  const u = new uPlot(
    {
      width: Math.max(plot.clientWidth, 200),
      height: CHART_HEIGHT,
      scales: { x: { time: false, range: [-0.5, names.length - 0.5] }, y: { range: (_u, _min, max) => [0, Math.max(1.1, max * 1.15)] } },
      axes: [
        { values: (_u, splits) => splits.map((s) => (Number.isInteger(s) && names[s] !== undefined ? barLabel(names[s]) : "")),
          size: 52, font: "12px system-ui, sans-serif" },
        { size: 60 },
      ],
      series: [{}, { label: title, stroke: paletteColor(0), fill: paletteColor(0) + "99", paths: bars, points: { show: false } }],
    },
    [names.map((_, i) => i), values],
    plot,
  );
  fitWidth(u, plot);
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
  barChart(grid, "throughput vs static-group", names, names.map((n) => res.policies[n].throughput_vs_static ?? 0));
  barChart(grid, "tail time vs static-group", names, names.map((n) => res.policies[n].tail_vs_static ?? 0));
  const traced = names.filter((n) => res.charts[n]).map((n) => [n, res.charts[n]] as [string, Trace]);
  if (traced.length > 0) cdfOverlay(overlay, traced);
  for (const [name, trace] of traced) bandTimeline(timelines, name, trace);
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
    if (state) state.textContent = sim.state;
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

void main();
