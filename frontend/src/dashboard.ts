// Entry point: builds the run dashboard inside #dashboard, loads the series
// snapshot, then follows live updates over the WebSocket.
import "uplot/dist/uPlot.min.css";
import "./dashboard.css";
import { MetricCatalog } from "./catalog";
import { CdfChart } from "./cdf";
import { MetricChart, groupedGrids } from "./charts";
import { appendEvent } from "./event-log";
import { connectSocket, wsUrl } from "./socket";
import { TimelineChart } from "./timeline";
import type { SeriesResponse, SocketMessage, Trace } from "./types";

/** Everything the page updates: metric charts by name, the trace charts and the state label. */
interface Dashboard {
  charts: Map<string, MetricChart>;
  cdf: CdfChart;
  timeline: TimelineChart;
  seriesUrl: string;
  /** Bumped on every WebSocket state message, so an older GET can't undo it. */
  stateSeq: number;
}

const TERMINAL = new Set(["succeeded", "failed", "cancelled"]);

function setState(state: string, reason?: string): void {
  const el = document.getElementById("run-state");
  if (!el) return;
  el.textContent = state;
  el.title = reason ?? "";
  // Cancel while the run is live, Resume once it failed or was cancelled.
  document.querySelectorAll<HTMLElement>(".run-action").forEach((form) => {
    const when = form.dataset.when ?? "";
    form.hidden = when === "live" ? TERMINAL.has(state) : !when.split(" ").includes(state);
  });
}

function showTrace(dash: Dashboard, trace: Trace | null): void {
  // Iterations only grow; ignore a snapshot older than what is shown.
  if (trace && Array.isArray(trace.requests) && trace.iteration >= dash.cdf.iteration) {
    dash.cdf.show(trace);
    dash.timeline.show(trace);
  }
}

/** GET the series snapshot and merge it into the charts (initial load and back-fill). */
async function loadSeries(dash: Dashboard): Promise<void> {
  const seq = dash.stateSeq;
  const resp = await fetch(dash.seriesUrl, {
    credentials: "same-origin",
    cache: "no-store",
    headers: { Accept: "application/json" },
  });
  if (!resp.ok) throw new Error(`GET ${dash.seriesUrl}: ${resp.status}`);
  const data = (await resp.json()) as SeriesResponse;
  for (const [name, points] of Object.entries(data.series ?? {})) {
    dash.charts.get(name)?.merge(points);
  }
  showTrace(dash, data.trace);
  if (data.state && seq === dash.stateSeq) setState(data.state);
}

/** Apply one WebSocket message. */
function handleMessage(dash: Dashboard, msg: SocketMessage): void {
  switch (msg.type) {
    case "metrics": {
      const touched = new Set<MetricChart>();
      for (const { name, step, value } of msg.points) {
        const chart = dash.charts.get(name);
        if (!chart) continue;
        chart.upsert(step, value);
        touched.add(chart);
      }
      touched.forEach((chart) => chart.redraw());
      break;
    }
    case "trace":
      showTrace(dash, msg);
      break;
    case "state":
      dash.stateSeq += 1;
      setState(msg.state, msg.reason);
      appendEvent("state", `→ ${msg.state}`, msg.reason);
      break;
    case "events":
      for (const e of msg.events) appendEvent(e.kind, "job", e.reason, e.at);
      break;
  }
}

/** Build the dashboard into `root` and start loading / streaming. */
export function mount(root: HTMLElement): void {
  const seriesUrl = root.dataset.seriesUrl;
  const wsPath = root.dataset.wsPath;
  if (!seriesUrl) throw new Error("#dashboard needs data-series-url");

  const grid = document.createElement("div");
  grid.className = "chart-grid";
  root.replaceChildren(grid);
  const catalog = MetricCatalog.fromPage();

  // Rollout policy for the CDF title; the attribute may be absent or empty.
  const policy = root.dataset.policy?.trim() || undefined;
  const cdf = new CdfChart(grid, policy);
  const timeline = new TimelineChart(grid); // right after the CDF
  const dash: Dashboard = { charts: new Map(), cdf, timeline, seriesUrl, stateSeq: 0 };
  // The catalogue's dashboard metrics, one titled grid per section; other metrics are not charted.
  groupedGrids(root, catalog.groupBySection(catalog.dashboardMetrics()), (name, parent) =>
    dash.charts.set(name, new MetricChart(name, parent, catalog)),
  );

  const backfill = () =>
    loadSeries(dash).catch((err) => console.warn("dashboard: series load failed", err));
  backfill();

  if (wsPath) {
    // Re-GET on every (re)open so points published while disconnected are filled in.
    connectSocket(wsUrl(wsPath), {
      open: backfill,
      message: (msg) => handleMessage(dash, msg),
    });
  }
}

const root = document.getElementById("dashboard");
if (root) mount(root);
