// Empirical CDF of request latency for the last iteration's trace.
import uPlot from "uplot";
import { CHART_HEIGHT, chartSection, fitWidth, markNoTrace } from "./charts";
import type { Trace, TraceRequest } from "./types";

/**
 * Latency CDF points: x = sorted latencies (finish_s - start_s) in seconds,
 * y = fraction of all requests completed by that latency.
 */
export function latencyCdf(requests: TraceRequest[]): [number[], number[]] {
  const latencies = requests
    .map((r) => r.finish_s - r.start_s)
    .filter((x) => Number.isFinite(x))
    .sort((a, b) => a - b);
  const n = requests.length;
  return [latencies, latencies.map((_, i) => (i + 1) / n)];
}

/** The `#latency-cdf` chart; call show() with each new trace. */
export class CdfChart {
  readonly section: HTMLElement;
  private readonly heading: HTMLHeadingElement;
  private readonly plot: uPlot;
  /** Iteration currently shown (-1 before the first trace). */
  iteration = -1;

  /** Title prefix: "Request latency CDF", plus the rollout policy when known. */
  private readonly title: string;

  /** Build the section and append it to `parent`; `policy` (if any) goes in the title. */
  constructor(parent: HTMLElement, policy?: string, height = CHART_HEIGHT) {
    this.title = policy ? `Request latency CDF — policy ${policy}` : "Request latency CDF";
    const { section, heading, plot } = chartSection(this.title);
    section.id = "latency-cdf";
    if (policy) section.dataset.policy = policy;
    section.classList.add("wide");
    this.section = section;
    this.heading = heading;
    parent.append(section);

    this.plot = new uPlot(
      {
        width: Math.max(plot.clientWidth, 200),
        height,
        scales: { x: { time: false }, y: { range: [0, 1] } },
        axes: [{ label: "latency (s)" }, { label: "fraction done", size: 60 }],
        series: [
          { label: "latency s" },
          {
            label: "fraction",
            stroke: "#059669",
            fill: "rgba(5, 150, 105, 0.08)",
            width: 2,
            paths: uPlot.paths.stepped!({ align: 1 }),
            points: { show: false },
          },
        ],
      },
      [[], []],
      plot,
    );
    fitWidth(this.plot, plot, height);
    markNoTrace(section, true);
  }

  /** Redraw from a trace; the title names its iteration. */
  show(trace: Trace): void {
    markNoTrace(this.section, false);
    this.heading.textContent =
      `${this.title} — iteration ${trace.iteration} (${trace.requests.length} requests)`;
    this.iteration = trace.iteration;
    this.section.dataset.iteration = String(trace.iteration);
    this.plot.setData(latencyCdf(trace.requests));
  }
}
