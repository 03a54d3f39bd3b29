// Entry point of the run-comparison page: reads the view from the URL, fetches
// GET /api/compare/ and draws one overlaid chart per metric some run has (with one key of
// the run colours for the page; values show on hover), the summary table and the config
// diff inside #compare.
import "uplot/dist/uPlot.min.css";
import "./ui.css";
import "./compare.css";
import { alignSeries } from "./align";
import { ApiError, fetchCompare } from "./api";
import { MetricCatalog } from "./catalog";
import { groupedGrids } from "./charts";
import { concurrencyText, gridClass, listTitles, splitCharted } from "./compare-layout";
import { renderConfigDiff } from "./config-diff";
import { Controls } from "./controls";
import { OverlayChart } from "./overlay-chart";
import { paletteColor } from "./palette";
import { renderSummary } from "./summary-table";
import type { CompareResponse } from "./types";
import { apiQuery, readView, replaceUrl, type CompareView } from "./view";

declare global {
  interface Window {
    /** ms from the API response to every chart drawn (tests and benchmarks). */
    __compareDrawMs?: number;
  }
}

function el<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Partial<HTMLElementTagNameMap[K]> = {}) {
  return Object.assign(document.createElement(tag), attrs);
}

function heading(text: string): HTMLHeadingElement {
  return el("h3", { textContent: text });
}

/** Page state: the view, the DOM it renders into, and the charts of the last response. */
class ComparePage {
  private readonly controls: Controls;
  private readonly error = el("div", { id: "compare-error", className: "compare-error", hidden: true });
  private readonly status = el("p", { className: "compare-status" });
  /** One titled grid per catalogue section of the compared metrics. */
  private readonly grid = el("div", { className: "chart-groups" });
  /** The run colours, once for the page; each entry shows or hides its run in every chart. */
  private readonly key = el("ul", { id: "run-key", className: "run-key" });
  /** One line naming the metrics no selected run logged (no chart for them). */
  private readonly leftOut = el("p", { id: "left-out", className: "compare-left-out", hidden: true });
  private readonly hiddenRuns = new Set<number>();
  private readonly catalog = MetricCatalog.fromPage();
  private readonly summary = el("table", { id: "summary", className: "compare-table" });
  private readonly mismatch = el("p", { id: "reference-mismatch", className: "compare-note", hidden: true });
  private readonly concurrent = el("p", { id: "concurrency-flag", className: "compare-note compare-warning", hidden: true });
  private readonly diff = el("table", { id: "config-diff", className: "compare-table" });
  private readonly results = el("div", { className: "compare-results", hidden: true });
  private charts: OverlayChart[] = [];
  private inflight: AbortController | null = null;
  private smoothFrame = 0;

  constructor(private readonly root: HTMLElement, private view: CompareView) {
    this.error.setAttribute("role", "alert");
    this.controls = new Controls(view, {
      x: (x) => this.change({ x }, true),
      smooth: (smooth) => this.change({ smooth }, false),
      ref: (ref) => this.change({ ref }, true),
      metrics: (metrics) => this.change({ metrics }, true),
    }, this.catalog);
    this.key.setAttribute("aria-label", "Runs: colour key (press to hide or show a run)");
    this.results.append(
      this.key,
      this.grid,
      this.leftOut,
      heading("Summary"),
      this.concurrent,
      this.mismatch,
      el("div", { className: "table-scroll table-card" }),
      heading("Config differences"),
      el("div", { className: "table-scroll table-card" }),
    );
    const [summaryBox, diffBox] = this.results.querySelectorAll(".table-scroll");
    summaryBox.append(this.summary);
    diffBox.append(this.diff);
    root.replaceChildren(this.controls.root, this.error, this.status, this.results);
  }

  /** Apply a control change: URL first, then refetch or just redraw. */
  private change(patch: Partial<CompareView>, refetch: boolean): void {
    this.view = { ...this.view, ...patch };
    replaceUrl(this.view);
    if (refetch) {
      void this.load();
    } else if (!this.smoothFrame) {
      // Coalesce slider events: at most one redraw per frame.
      this.smoothFrame = requestAnimationFrame(() => {
        this.smoothFrame = 0;
        for (const chart of this.charts) chart.setSmooth(this.view.smooth);
      });
    }
  }

  private showError(message: string | null): void {
    this.error.textContent = message ?? "";
    this.error.hidden = message === null;
  }

  /** Fetch the current view and draw it; a newer load cancels an older one. */
  async load(): Promise<void> {
    this.inflight?.abort();
    const inflight = (this.inflight = new AbortController());
    const query = apiQuery(this.view);
    const { api, summaryCsv, seriesCsv } = this.root.dataset;
    this.controls.setCsv(summaryCsv, seriesCsv, query);
    delete document.body.dataset.compareDrawn;
    document.body.dataset.compareState = "loading";
    this.status.textContent = "Loading…";

    let data: CompareResponse;
    let at: number;
    try {
      ({ data, at } = await fetchCompare(`${api ?? "/api/compare/"}?${query}`, inflight.signal));
    } catch (err) {
      if (inflight.signal.aborted) return; // superseded by a newer load
      this.clear();
      this.status.textContent = "";
      this.showError(err instanceof ApiError ? err.message : `Unexpected error: ${String(err)}`);
      document.body.dataset.compareState = "error";
      return;
    }
    this.showError(null);
    this.status.textContent = "";
    this.controls.update(this.view, data);
    const drawn = this.render(data);
    const points = await drawn;
    if (inflight.signal.aborted) return;
    this.inflight = null;
    window.__compareDrawMs = performance.now() - at;
    document.body.dataset.compareDrawn = String(points);
    document.body.dataset.compareState = "ready";
  }

  /** The page's colour key: one toggle per run, in the charts' colours. */
  private renderKey(data: CompareResponse, lines: { label: string; color: string }[]): void {
    for (const id of [...this.hiddenRuns]) if (!data.runs.some((r) => r.id === id)) this.hiddenRuns.delete(id);
    const items = data.runs.map((run, i) => {
      const li = el("li");
      const button = el("button", { type: "button", className: "run-key-item", title: `Hide or show ${lines[i].label} in every chart` });
      button.dataset.runId = String(run.id);
      button.setAttribute("aria-pressed", String(!this.hiddenRuns.has(run.id)));
      const swatch = el("span", { className: "swatch" });
      swatch.style.background = lines[i].color;
      button.append(swatch, el("span", { className: "run-key-label", textContent: lines[i].label }));
      if (run.id === data.reference) button.append(el("span", { className: "ref-badge", textContent: "reference" }));
      button.addEventListener("click", () => {
        const show = this.hiddenRuns.has(run.id);
        if (show) this.hiddenRuns.delete(run.id);
        else this.hiddenRuns.add(run.id);
        button.setAttribute("aria-pressed", String(show));
        for (const chart of this.charts) chart.setRunShown(i, show);
      });
      li.append(button);
      return li;
    });
    this.key.replaceChildren(...items);
  }

  private clear(): void {
    for (const chart of this.charts) chart.destroy();
    this.charts = [];
    this.grid.replaceChildren();
    this.results.hidden = true;
  }

  /** Build charts and tables for `data`; resolves with the total points drawn once all charts are drawn. */
  private async render(data: CompareResponse): Promise<number> {
    this.clear();
    this.results.hidden = false; // visible before the charts are built, so they get their width
    const colors = data.runs.map((_, i) => paletteColor(i));
    const lines = data.runs.map((run, i) => ({ label: run.label || `#${run.id}`, color: colors[i] }));
    this.renderKey(data, lines);
    // A metric no selected run logged gets no chart, only a mention in one line.
    const { charted, missing } = splitCharted(data.metrics, data.series, data.runs.map((r) => r.id));
    this.leftOut.hidden = missing.length === 0;
    this.leftOut.textContent = missing.length === 0 ? "" : `Not logged by these runs (no chart): ${listTitles(
      missing.map((m) => this.catalog.title(m)))}.`;
    const groups = this.catalog.groupBySection(charted);
    groupedGrids(this.grid, groups, (metric, grid) => {
      const byRun = data.series[metric] ?? {};
      const aligned = alignSeries(data.runs.map((run) => byRun[String(run.id)]));
      const chart = new OverlayChart(grid, metric, this.catalog, data.x, lines, aligned, this.view.smooth);
      data.runs.forEach((run, i) => this.hiddenRuns.has(run.id) && chart.setRunShown(i, false));
      this.charts.push(chart);
    });
    this.grid.querySelectorAll<HTMLElement>(".chart-grid").forEach((grid) => {
      grid.className = gridClass(grid.children.length);
    });
    renderSummary(this.summary, data, colors, this.catalog.summaryColumns());
    const differ = Object.entries(data.reference_mismatch ?? {});
    this.mismatch.hidden = differ.length === 0;
    this.mismatch.textContent = differ.length === 0 ? "" : `Ratios compare more than the policy: ${differ
      .map(([id, keys]) => `#${id} differs from reference #${data.reference} in ${keys.join(", ")}`)
      .join("; ")}.`;
    const text = concurrencyText(data.concurrent ?? [], data.shared_cluster ?? {});
    this.concurrent.hidden = text === "";
    this.concurrent.textContent = text;
    renderConfigDiff(this.diff, data);
    await Promise.all(this.charts.map((c) => c.drawn));
    return this.charts.reduce((sum, c) => sum + c.points, 0);
  }
}

/** Build the comparison page into `root` from the page URL. */
export function mount(root: HTMLElement): void {
  const view = readView(location.search);
  if (view.runs.length === 0) {
    root.replaceChildren(el("p", { id: "compare-hint", className: "compare-hint", textContent: "Pick runs to compare" }));
    document.body.dataset.compareState = "empty";
    return;
  }
  void new ComparePage(root, view).load();
}

const root = document.getElementById("compare");
if (root) mount(root);
