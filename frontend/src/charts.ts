// One uPlot line chart per metric, keyed by metric name, x axis = iteration.
import uPlot from "uplot";
import type { Point } from "./types";
import { yAxis } from "./format";

/** Metrics shown on the dashboard, in display order; others are ignored. */
export const METRICS = [
  "rollout/throughput_tok_s",
  "rollout/time_s",
  "rollout/tail_time_s",
  "rollout/request_latency_s/p50",
  "rollout/request_latency_s/p90",
  "rollout/request_latency_s/p99",
  "rollout/request_latency_s/max",
  "rollout/response_len/mean",
  "rollout/clip_ratio",
  "rollout/decode_tok_s",
  "rollout/spec/accept_len",
  "rollout/preemptions",
  "rollout/migrations",
  "rollout/reprefill_tokens",
  "rollout/instance_idle_frac",
  "reward/mean",
  "reward/accuracy",
  "train/loss",
  "train/kl",
  "train/entropy",
  "train/time_s",
  "sync/weight_time_s",
  "iteration/time_s",
] as const;

export const CHART_HEIGHT = 220;

/**
 * Create `<section class="chart">` with an `<h3>` title, an optional extra
 * header element and a plot area; returns the section and the plot area.
 */
export function chartSection(title: string, extra?: HTMLElement): {
  section: HTMLElement;
  heading: HTMLHeadingElement;
  plot: HTMLDivElement;
} {
  const section = document.createElement("section");
  section.className = "chart";
  const header = document.createElement("header");
  const heading = document.createElement("h3");
  heading.textContent = title;
  header.append(heading);
  if (extra) header.append(extra);
  const plot = document.createElement("div");
  plot.className = "plot";
  section.append(header, plot);
  return { section, heading, plot };
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

  /** Build the section for `name` and append it to `parent`. */
  constructor(readonly name: string, parent: HTMLElement) {
    this.counter = document.createElement("span");
    this.counter.className = "points";
    this.counter.dataset.metric = name;
    this.counter.title = "points";
    this.counter.textContent = "0";

    const { section, plot } = chartSection(name, this.counter);
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
          { label: name.split("/").pop(), stroke: "#2563eb", width: 2, points: { size: 5 } },
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
