// Entry point of the run page: the header (state, progress, ETA, headline numbers), the
// chart sections in a fixed order (each foldable, remembered), the job log; loads the
// series snapshot, then follows live updates over the WebSocket.
import "uplot/dist/uPlot.min.css";
import "./dashboard.css";
import "./run-page.css";
import { MetricCatalog } from "./catalog";
import { CdfChart } from "./cdf";
import { MetricChart } from "./charts";
import { appendEvent } from "./event-log";
import { renderHeadline, type HeadlineResponse } from "./headline";
import { LogView } from "./log-view";
import { memoryWarning } from "./memory-warning";
import { LIVE_STATES, progressOf, progressText } from "./progress";
import { browserStore, loadCollapsed, setCollapsed } from "./sections";
import { connectSocket, wsUrl } from "./socket";
import { TimelineChart } from "./timeline";
import type { SeriesResponse, SocketMessage, Trace } from "./types";

const TERMINAL = new Set(["succeeded", "failed", "cancelled"]);
const TAIL_SECTION = "Tail and latency";
/** Headline metrics: charted wide and taller. */
const IMPORTANT = new Set(["rollout/throughput_tok_s", "rollout/tail_time_s", "reward/mean", "reward/accuracy"]);
const ITERATION_METRIC = "iteration/time_s";
/** A line per Ray node (umbra.telemetry.system); the header warns while one is at MEMORY_WARN_FRAC or above. */
const MEMORY_METRIC = "system/node/{node}/mem_frac";
const MEMORY_WARN_FRAC = 0.9;
const X_LABELS: Record<string, string> = { step: "iteration", relative: "seconds since the first point" };

interface Dashboard {
  catalog: MetricCatalog;
  /** By catalogue name: a metric's chart, or a family's (a line per member). */
  charts: Map<string, MetricChart>;
  sections: Map<string, HTMLElement>;
  cdf: CdfChart;
  timeline: TimelineChart;
  seriesUrl: string;
  headlineUrl?: string;
  /** Bumped on every WebSocket state message, so an older GET can't undo it. */
  stateSeq: number;
  state: string;
  total: number | null;
  x: string;
  iterationTimes: Map<number, number>;
  headlineTimer?: number;
  refetchTimer?: number;
}

function setState(dash: Dashboard, state: string, reason?: string): void {
  const changed = state !== dash.state; // the page was drawn with dash.state (and the download link's visibility)
  dash.state = state;
  const el = document.getElementById("run-state");
  if (el) {
    el.textContent = state;
    el.title = reason ?? "";
    el.className = `badge state-${state}`;
  }
  // Cancel while the run is live, Resume once it failed or was cancelled.
  document.querySelectorAll<HTMLElement>(".run-action").forEach((form) => {
    const when = form.dataset.when ?? "";
    form.hidden = when === "live" ? TERMINAL.has(state) : !when.split(" ").includes(state);
  });
  updateProgress(dash);
  updateEmpty(dash);
  // A run's checkpoint is looked for when it ends (a HEAD at start would only log a 404 in the console).
  if (changed && TERMINAL.has(state)) void showModelDownload();
}

/** Unhide "Download model" once the run has a checkpoint (HEAD of the link: 200 or 404). */
async function showModelDownload(): Promise<void> {
  const link = document.getElementById("download-model") as HTMLAnchorElement | null;
  if (!link?.hidden) return;
  try {
    const resp = await fetch(link.href, { method: "HEAD", credentials: "same-origin" });
    if (resp.ok) link.hidden = false;
  } catch {
    // offline for a moment: the next state change looks again
  }
}

function updateProgress(dash: Dashboard): void {
  const times = [...dash.iterationTimes.values()];
  const p = progressOf(times, dash.total, dash.state);
  const bar = document.getElementById("progress-bar");
  if (bar) bar.style.width = `${p.percent.toFixed(0)}%`;
  bar?.parentElement?.setAttribute("aria-valuenow", p.percent.toFixed(0));
  const text = document.getElementById("progress-text");
  if (text) text.textContent = progressText(p);
}

/** The chart a logged name is drawn in and its line there: its own chart, or its family's. */
function chartOf(dash: Dashboard, name: string): [MetricChart, string] | undefined {
  const own = dash.charts.get(name) ?? chartOnArrival(dash, name);
  if (own) return [own, ""];
  const member = dash.catalog.member(name);
  const family = member && dash.charts.get(member.family);
  return family ? [family, member.key] : undefined;
}

/**
 * A new chart for a name known only once logged (catalog.chartedOnArrival: a custom reward's
 * `reward/extra/<key>`, one chart per key), in its section after the charts that come before
 * it in catalogue order, keys by name; undefined for other names or without that section.
 */
function chartOnArrival(dash: Dashboard, name: string): MetricChart | undefined {
  if (!dash.catalog.chartedOnArrival(name)) return undefined;
  const grid = dash.sections.get(dash.catalog.lookup(name)?.section ?? "")?.querySelector<HTMLElement>(".chart-grid");
  if (!grid) return undefined;
  const shown = [...grid.children].filter((el): el is HTMLElement => el instanceof HTMLElement && !!el.dataset.metric);
  const next = dash.catalog.placeBefore(shown.map((el) => el.dataset.metric!), name);
  const chart = new MetricChart(name, grid, dash.catalog, { height: 220, xLabel: X_LABELS[dash.x] ?? dash.x });
  dash.charts.set(name, chart);
  const before = shown.find((el) => el.dataset.metric === next);
  if (before) grid.insertBefore(chart.section, before);
  return chart;
}

/** The header's warning while a node's memory use is at or above MEMORY_WARN_FRAC (umbra.telemetry.system). */
function updateMemoryWarning(dash: Dashboard): void {
  const el = document.getElementById("memory-warning");
  if (!el) return;
  const text = memoryWarning(dash.charts.get(MEMORY_METRIC)?.latest() ?? new Map(), MEMORY_WARN_FRAC);
  el.hidden = text === "" || TERMINAL.has(dash.state);
  el.textContent = text;
}

/** Hide charts without points and sections left empty; before any point, the starting panel. */
function updateEmpty(dash: Dashboard): void {
  updateMemoryWarning(dash);
  let any = dash.cdf.iteration >= 0;
  for (const chart of dash.charts.values()) {
    chart.section.hidden = chart.size === 0;
    if (chart.size) any = true;
  }
  for (const [name, box] of dash.sections) {
    const shown = box.querySelector(".chart-grid .chart:not([hidden])") !== null ||
      (name === TAIL_SECTION && dash.cdf.iteration >= 0);
    box.hidden = !shown;
  }
  const starting = document.getElementById("starting");
  const waiting = !any && LIVE_STATES.has(dash.state);
  if (starting) {
    starting.hidden = any;
    starting.dataset.phase = waiting ? dash.state : "none";
    starting.textContent = !any
      ? dash.state === "queued"
        ? "Waiting in the queue: the run starts when its cluster can hold it."
        : waiting
          ? "Starting engines: the vLLM rollout instances and the trainer are loading the model. " +
            "The charts appear with the first iteration (a few minutes)."
          : "This run logged no metrics."
      : "";
  }
  document.getElementById("view-controls")?.toggleAttribute("hidden", !any);
}

function showTrace(dash: Dashboard, trace: Trace | null): void {
  // Iterations only grow; ignore a snapshot older than what is shown.
  if (trace && Array.isArray(trace.requests) && trace.iteration >= dash.cdf.iteration) {
    dash.cdf.show(trace);
    dash.timeline.show(trace);
  }
}

async function getJson<T>(url: string): Promise<T> {
  const resp = await fetch(url, { credentials: "same-origin", cache: "no-store", headers: { Accept: "application/json" } });
  if (!resp.ok) throw new Error(`GET ${url}: ${resp.status}`);
  return (await resp.json()) as T;
}

/** GET the series snapshot and merge it into the charts (initial load, back-fill, x-axis switch). */
async function loadSeries(dash: Dashboard): Promise<void> {
  const seq = dash.stateSeq;
  const x = dash.x;
  const data = await getJson<SeriesResponse>(`${dash.seriesUrl}?x=${x}`);
  if (x !== dash.x) return; // switched again meanwhile
  for (const [name, points] of Object.entries(data.series ?? {})) {
    const target = chartOf(dash, name);
    target?.[0].merge(points, target[1]);
  }
  if (x === "step") for (const [step, value] of data.series?.[ITERATION_METRIC] ?? []) dash.iterationTimes.set(step, value);
  showTrace(dash, data.trace);
  if (data.state && seq === dash.stateSeq) setState(dash, data.state);
  else updateEmpty(dash);
}

async function loadHeadline(dash: Dashboard): Promise<void> {
  const dl = document.getElementById("headline");
  if (!dash.headlineUrl || !dl) return;
  renderHeadline(dl, await getJson<HeadlineResponse>(dash.headlineUrl));
}

function later(dash: Dashboard, which: "headlineTimer" | "refetchTimer", fn: () => Promise<void>, ms: number): void {
  if (dash[which] !== undefined) return;
  dash[which] = window.setTimeout(() => {
    dash[which] = undefined;
    fn().catch((err) => console.warn("dashboard:", err));
  }, ms);
}

/** Apply one WebSocket message. */
function handleMessage(dash: Dashboard, msg: SocketMessage, log: LogView | null): void {
  switch (msg.type) {
    case "metrics": {
      for (const p of msg.points) if (p.name === ITERATION_METRIC) dash.iterationTimes.set(p.step, p.value);
      if (dash.x === "step") {
        const touched = new Set<MetricChart>();
        for (const { name, step, value } of msg.points) {
          const target = chartOf(dash, name);
          if (!target) continue;
          target[0].upsert(step, value, target[1]);
          touched.add(target[0]);
        }
        touched.forEach((chart) => chart.redraw());
      } else {
        later(dash, "refetchTimer", () => loadSeries(dash), 1000); // pushed points carry no wall time
      }
      updateProgress(dash);
      updateEmpty(dash);
      later(dash, "headlineTimer", () => loadHeadline(dash), 1500);
      break;
    }
    case "trace":
      showTrace(dash, msg);
      updateEmpty(dash);
      break;
    case "state":
      dash.stateSeq += 1;
      setState(dash, msg.state, msg.reason);
      appendEvent("state", `→ ${msg.state}`, msg.reason);
      break;
    case "events":
      for (const e of msg.events) appendEvent(e.kind, "job", e.reason, e.at);
      break;
    case "log":
      log?.update(msg.tail);
      break;
  }
}

/** One foldable section: `<section class="chart-group">` with a toggle button and a grid. */
function sectionBox(root: HTMLElement, name: string, collapsed: Set<string>): { box: HTMLElement; grid: HTMLElement } {
  const box = document.createElement("section");
  box.className = "chart-group";
  box.dataset.section = name;
  const id = `section-${name.toLowerCase().replace(/[^a-z]+/g, "-")}`;
  const head = document.createElement("h2");
  head.className = "chart-group-title";
  const toggle = document.createElement("button");
  toggle.type = "button";
  toggle.className = "section-toggle";
  toggle.setAttribute("aria-controls", id);
  toggle.textContent = name;
  head.append(toggle);
  const grid = document.createElement("div");
  grid.className = "chart-grid";
  grid.id = id;
  const apply = (folded: boolean) => {
    box.classList.toggle("collapsed", folded);
    toggle.setAttribute("aria-expanded", String(!folded));
    grid.hidden = folded;
    window.dispatchEvent(new Event("resize"));
  };
  apply(collapsed.has(name));
  toggle.addEventListener("click", () => {
    const folded = !box.classList.contains("collapsed");
    setCollapsed(browserStore(), name, folded);
    apply(folded);
  });
  box.append(head, grid);
  root.append(box);
  return { box, grid };
}

/** Build the dashboard into `root` and start loading / streaming. */
export function mount(root: HTMLElement): void {
  const seriesUrl = root.dataset.seriesUrl;
  if (!seriesUrl) throw new Error("#dashboard needs data-series-url");
  const catalog = MetricCatalog.fromPage();
  const collapsed = loadCollapsed(browserStore());
  root.replaceChildren();

  const charts = new Map<string, MetricChart>();
  const sections = new Map<string, HTMLElement>();
  const groups = catalog.groupBySection(catalog.dashboardMetrics());
  const order = catalog.doc.sections.length ? catalog.doc.sections : groups.map((g) => g.section);
  let cdf: CdfChart | undefined;
  let timeline: TimelineChart | undefined;
  const policy = root.dataset.policy?.trim() || undefined;
  for (const name of order.includes(TAIL_SECTION) ? order : [...order, TAIL_SECTION]) {
    const names = groups.find((g) => g.section === name)?.names ?? [];
    if (!names.length && name !== TAIL_SECTION) continue;
    const { box, grid } = sectionBox(root, name, collapsed);
    sections.set(name, box);
    if (name === TAIL_SECTION) {
      // The two pictures only Umbra has: large, side by side.
      const pair = document.createElement("div");
      pair.className = "trace-pair";
      grid.before(pair);
      grid.classList.add("after-pair");
      timeline = new TimelineChart(pair, 320);
      cdf = new CdfChart(pair, policy, 320);
      const fold = box.querySelector<HTMLButtonElement>(".section-toggle")!;
      const sync = () => (pair.hidden = grid.hidden);
      sync();
      fold.addEventListener("click", sync);
    }
    for (const metric of names) {
      const wide = IMPORTANT.has(metric);
      charts.set(metric, new MetricChart(metric, grid, catalog, { wide, height: 220 }));
    }
  }
  const total = Number(root.dataset.total);
  const dash: Dashboard = {
    catalog, charts, sections, cdf: cdf!, timeline: timeline!, seriesUrl, headlineUrl: root.dataset.headlineUrl,
    stateSeq: 0, state: root.dataset.state ?? "", total: Number.isFinite(total) && total > 0 ? total : null,
    x: "step", iterationTimes: new Map(),
  };
  updateEmpty(dash);

  const pre = document.getElementById("log-tail");
  const log = pre
    ? new LogView(pre, document.getElementById("log-search") as HTMLInputElement | null,
                  document.getElementById("log-matches"), document.getElementById("log-count"))
    : null;

  document.querySelectorAll<HTMLButtonElement>("#view-controls [data-x]").forEach((button) =>
    button.addEventListener("click", () => {
      const x = button.dataset.x ?? "step";
      if (x === dash.x) return;
      dash.x = x;
      document.querySelectorAll<HTMLButtonElement>("#view-controls [data-x]").forEach((b) =>
        b.setAttribute("aria-pressed", String(b === button)));
      for (const chart of charts.values()) chart.reset(X_LABELS[x] ?? x);
      loadSeries(dash).catch((err) => console.warn("dashboard: series load failed", err));
    }),
  );
  const copy = document.getElementById("copy-config");
  copy?.addEventListener("click", () => {
    const text = document.getElementById(copy.dataset.copy ?? "")?.textContent ?? "";
    navigator.clipboard?.writeText(text).then(
      () => (copy.textContent = "Copied"),
      () => (copy.textContent = "Copy failed"),
    );
    window.setTimeout(() => (copy.textContent = "Copy YAML"), 1500);
  });

  const backfill = () => {
    loadSeries(dash).catch((err) => console.warn("dashboard: series load failed", err));
    loadHeadline(dash).catch((err) => console.warn("dashboard: headline load failed", err));
  };
  backfill();
  const wsPath = root.dataset.wsPath;
  if (wsPath) {
    // Re-GET on every (re)open so points published while disconnected are filled in.
    connectSocket(wsUrl(wsPath), { open: backfill, message: (msg) => handleMessage(dash, msg, log) });
  }
}

const root = document.getElementById("dashboard");
if (root) mount(root);
