// One uPlot line chart per metric, keyed by metric name, x axis = iteration; titles,
// units and grouping from the metric catalogue. A family's chart (a name with a
// placeholder, such as "system/actor/{actor}/rss_gib") draws one line per member.
import uPlot from "uplot";
import { placeholdersOf, type MetricCatalog, type MetricGroup } from "./catalog";
import { LineSet } from "./lines";
import { paletteColor } from "./palette";
import type { Point } from "./types";
import { formatNumber, yAxis } from "./format";

export const CHART_HEIGHT = 220;

/**
 * Create `<section class="chart">` with an `<h3>` title, an optional extra
 * header element and a plot area; returns the section and the plot area.
 * With `metric`, the heading also shows the metric's logged name (`code.metric-name`).
 */
export function chartSection(title: string, extra?: HTMLElement, metric?: string): {
  section: HTMLElement;
  heading: HTMLHeadingElement;
  plot: HTMLDivElement;
} {
  const section = document.createElement("section");
  section.className = "chart";
  const header = document.createElement("header");
  const heading = document.createElement("h3");
  heading.textContent = title;
  if (metric && metric !== title) {
    const code = document.createElement("code");
    code.className = "metric-name";
    code.textContent = metric;
    heading.append(" ", code);
  }
  header.append(heading);
  if (extra) header.append(extra);
  const plot = document.createElement("div");
  plot.className = "plot";
  section.append(header, plot);
  return { section, heading, plot };
}

/** The y range of a metric chart: uPlot's own (10% padding, round ends) unless every value
 *  is the same, where uPlot would span 0..100 and a reward of 0 would read as a percentage:
 *  then 0..1 around zero, else the value ±10%. */
export function yRange(min: number | null, max: number | null): [number, number] {
  if (min == null || max == null || !Number.isFinite(min) || !Number.isFinite(max)) return [0, 1];
  if (min === max) {
    if (min === 0) return [0, 1];
    const pad = Math.abs(min) * 0.1;
    return [min - pad, max + pad];
  }
  const [lo, hi] = uPlot.rangeNum(min, max, 0.1, true);
  return [lo ?? min, hi ?? max];
}

/** Mark a trace chart (timeline, latency CDF) as waiting for its first trace: a line says
 *  when it is drawn, instead of bare axes (ours). */
export function markNoTrace(section: HTMLElement, waiting: boolean): void {
  section.classList.toggle("no-trace", waiting);
  let note = section.querySelector<HTMLElement>(".no-trace-note");
  if (waiting && !note) {
    note = document.createElement("p");
    note.className = "no-trace-note";
    note.textContent = "Drawn when the first iteration's rollout ends (from its trace of every request).";
    section.querySelector("header")?.after(note);
  }
  if (!waiting) note?.remove();
}

/**
 * One `<section class="chart-group">` per group, each with an `<h3>` section title and a
 * `.chart-grid`, appended to `parent`; `build(name, grid)` fills a grid with a chart.
 */
export function groupedGrids(parent: HTMLElement, groups: MetricGroup[], build: (name: string, grid: HTMLElement) => void): void {
  for (const group of groups) {
    const box = document.createElement("section");
    box.className = "chart-group";
    box.dataset.section = group.section;
    const title = document.createElement("h3");
    title.className = "chart-group-title";
    title.textContent = group.section;
    const grid = document.createElement("div");
    grid.className = "chart-grid";
    box.append(title, grid);
    parent.append(box);
    for (const name of group.names) build(name, grid);
  }
}

/** A chart heading's tooltip: the metric's description and which way is better. */
export function describe(catalog: MetricCatalog, name: string): string {
  const m = catalog.lookup(name);
  if (!m) return name;
  const better = m.better === "none" ? "" : ` (${m.better} is better)`;
  return `${name}: ${m.description}${better}`;
}

/**
 * Keep `chart` as wide as `container`, now and whenever it resizes; returns the
 * observer (disconnect it when the chart is destroyed).
 */
export function fitWidth(chart: uPlot, container: HTMLElement, height = CHART_HEIGHT): ResizeObserver {
  const fit = () => {
    const width = Math.floor(container.clientWidth);
    if (width > 0 && width !== chart.width) chart.setSize({ width, height });
  };
  const observer = new ResizeObserver(fit);
  observer.observe(container);
  fit();
  return observer;
}

/** Options of a metric chart: `wide` spans two grid columns (a headline metric), `height` in px. */
export interface MetricChartOptions {
  wide?: boolean;
  height?: number;
  /** x-axis label: "iteration" (default) or "seconds since the first point". */
  xLabel?: string;
}

/** A family's line: the member's key, its colour by arrival, values on hover in the legend. */
function memberSeries(key: string, index: number, unit: string): uPlot.Series {
  return {
    label: key, stroke: paletteColor(index), width: 2, points: { size: 4 },
    value: (_u, v) => (v == null ? "–" : `${formatNumber(v)}${unit ? ` ${unit}` : ""}`),
  };
}

/** The hovered x of a chart: "iteration 3" or "12.5 s"; "" when nothing is hovered. */
export function xText(xLabel: string, x: number | null | undefined): string {
  if (x == null) return "";
  return xLabel === "iteration" ? `iteration ${x}` : `${formatNumber(x)} s`;
}

/** The hover readout of a chart: "iteration 3 · 231.0 tok/s"; "" when nothing is hovered. */
export function readoutText(xLabel: string, x: number | null | undefined, y: number | null | undefined, unit: string): string {
  if (x == null || y == null || !Number.isFinite(y)) return "";
  return `${xText(xLabel, x)} · ${formatNumber(y)}${unit ? ` ${unit}` : ""}`;
}

/**
 * A line chart of one metric's [x, value] points, kept sorted by x, without a legend:
 * hovering the plot shows the point's values in the header (`.readout`). A family's chart
 * has a line per member (`upsert(step, value, key)`) and a legend naming them, with their
 * values on hover.
 */
export class MetricChart {
  readonly section: HTMLElement;
  /** One line per member of the family `name` (its name has a placeholder). */
  readonly family: boolean;
  private readonly counter: HTMLSpanElement;
  private readonly readout: HTMLSpanElement;
  private readonly lines = new LineSet();
  /** The line keys of the plot's series 1, 2, ... */
  private shown: string[];
  private readonly plot: uPlot;
  private readonly unit: string;
  private xLabel: string;

  /** Build the section for `name` (title and unit from `catalog`) and append it to `parent`. */
  constructor(readonly name: string, parent: HTMLElement, catalog: MetricCatalog, options: MetricChartOptions = {}) {
    this.counter = document.createElement("span");
    this.counter.className = "points";
    this.counter.dataset.metric = name;
    this.counter.title = "points";
    this.counter.textContent = "0";
    this.readout = document.createElement("span");
    this.readout.className = "readout";
    this.readout.setAttribute("aria-live", "off");
    const extra = document.createElement("span");
    extra.className = "chart-extra";
    extra.append(this.readout, this.counter);
    this.xLabel = options.xLabel ?? "iteration";
    this.family = placeholdersOf(name).length > 0;
    this.shown = this.family ? [] : [""];

    const { section, heading, plot } = chartSection(catalog.title(name), extra, name);
    heading.title = describe(catalog, name);
    section.dataset.metric = name;
    if (options.wide) section.classList.add("wide");
    this.section = section;
    parent.append(section);
    const height = options.height ?? CHART_HEIGHT;
    const unit = catalog.lookup(name)?.unit ?? "";
    this.unit = unit;

    this.plot = new uPlot(
      {
        width: Math.max(plot.clientWidth, 200),
        height,
        scales: { x: { time: false }, y: { range: (_u, min, max) => yRange(min, max) } },
        axes: [
          // Iterations are integers: never put ticks at fractional steps.
          { label: this.xLabel, incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000] },
          yAxis(60),
        ],
        series: this.family ? [{ label: this.xLabel }] : [
          { label: this.xLabel },
          { label: catalog.lookup(name)?.label ?? name.split("/").pop(), stroke: "#2563eb", width: 2, points: { size: 5 } },
        ],
        legend: { show: this.family },
        hooks: {
          setCursor: [
            (u) => {
              const i = u.cursor.idx;
              // a family's values are in its legend (one row per member)
              this.readout.textContent = i == null ? "" : this.family ? xText(this.xLabel, u.data[0][i])
                : readoutText(this.xLabel, u.data[0][i], u.data[1][i] as number | null, unit);
            },
          ],
        },
      },
      this.lines.data(this.shown) as uPlot.AlignedData,
      plot,
    );
    fitWidth(this.plot, plot, height);
  }

  /** Drop every point (and a family's lines) and label the x axis `label` (the page switched between iteration and wall time). */
  reset(label: string): void {
    this.lines.clear();
    if (this.family) {
      for (let i = this.shown.length; i >= 1; i--) this.plot.delSeries(i);
      this.shown = [];
    }
    this.xLabel = label;
    this.plot.axes[0].label = label;
    const axisLabel = this.plot.root.querySelector(".u-axis .u-label"); // uPlot draws labels as DOM once
    if (axisLabel) axisLabel.textContent = label;
    this.redraw();
  }

  /** The value at the highest x, if any (a single metric's chart; a family's: `latest()`). */
  get last(): number | undefined {
    return this.lines.latest("");
  }

  /** Each line's latest value by key ("" for a single metric's chart). */
  latest(): Map<string, number> {
    const out = new Map<string, number>();
    for (const key of this.shown) {
      const v = this.lines.latest(key);
      if (v !== undefined) out.set(key, v);
    }
    return out;
  }

  /** Number of x values the chart currently holds. */
  get size(): number {
    return this.lines.size;
  }

  /**
   * Insert a point, replacing any point at the same step; `key`: the family member it
   * belongs to (ignored by a single metric's chart). Call redraw() after.
   */
  upsert(step: number, value: number, key = ""): void {
    if (!this.family) key = "";
    if (this.lines.upsert(step, value, key) && this.family) {
      const keys = this.lines.keys();
      const at = keys.indexOf(key);
      this.plot.addSeries(memberSeries(key, this.lines.arrivalIndex(key), this.unit), at + 1);
      this.shown = keys;
      this.redraw(); // uPlot needs the data of every series it has
    }
  }

  /** Merge many [step, value] pairs (of the member `key` in a family's chart), then redraw. */
  merge(points: Point[], key = ""): void {
    for (const [step, value] of points) this.upsert(step, value, key);
    this.redraw();
  }

  /** Push the current points to uPlot and update the point counter. */
  redraw(): void {
    this.plot.setData(this.lines.data(this.shown) as uPlot.AlignedData);
    this.counter.textContent = String(this.lines.size);
  }
}
