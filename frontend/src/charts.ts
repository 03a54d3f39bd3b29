// One uPlot line chart per metric, keyed by metric name, x axis = iteration; titles,
// units and grouping from the metric catalogue.
import uPlot from "uplot";
import type { MetricCatalog, MetricGroup } from "./catalog";
import type { Point } from "./types";
import { yAxis } from "./format";

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

/** A line chart of one metric's [iteration, value] points, kept sorted by step. */
export class MetricChart {
  readonly section: HTMLElement;
  private readonly counter: HTMLSpanElement;
  private readonly steps: number[] = [];
  private readonly values: number[] = [];
  private readonly plot: uPlot;

  /** Build the section for `name` (title and unit from `catalog`) and append it to `parent`. */
  constructor(readonly name: string, parent: HTMLElement, catalog: MetricCatalog) {
    this.counter = document.createElement("span");
    this.counter.className = "points";
    this.counter.dataset.metric = name;
    this.counter.title = "points";
    this.counter.textContent = "0";

    const { section, heading, plot } = chartSection(catalog.title(name), this.counter, name);
    heading.title = describe(catalog, name);
    section.dataset.metric = name;
    this.section = section;
    parent.append(section);

    this.plot = new uPlot(
      {
        width: Math.max(plot.clientWidth, 200),
        height: CHART_HEIGHT,
        scales: { x: { time: false } },
        axes: [
          // Iterations are integers: never put ticks at fractional steps.
          { label: "iteration", incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000] },
          yAxis(60),
        ],
        series: [
          { label: "iteration" },
          { label: catalog.lookup(name)?.label ?? name.split("/").pop(), stroke: "#2563eb", width: 2, points: { size: 5 } },
        ],
        legend: { show: true },
      },
      [this.steps, this.values],
      plot,
    );
    fitWidth(this.plot, plot);
  }

  /** Number of points the chart currently holds. */
  get size(): number {
    return this.steps.length;
  }

  /** Insert a point, replacing any point at the same step; call redraw() after. */
  upsert(step: number, value: number): void {
    const { steps, values } = this;
    let lo = 0;
    let hi = steps.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (steps[mid] < step) lo = mid + 1;
      else hi = mid;
    }
    if (steps[lo] === step) values[lo] = value;
    else {
      steps.splice(lo, 0, step);
      values.splice(lo, 0, value);
    }
  }

  /** Merge many [step, value] pairs, then redraw. */
  merge(points: Point[]): void {
    for (const [step, value] of points) this.upsert(step, value);
    this.redraw();
  }

  /** Push the current points to uPlot and update the point counter. */
  redraw(): void {
    this.plot.setData([this.steps, this.values]);
    this.counter.textContent = String(this.steps.length);
  }
}
