// Instance timeline: how many requests each instance runs over the rollout,
// so the long tail (one busy instance, the rest idle) is visible.
import uPlot from "uplot";
import { CHART_HEIGHT, chartSection, fitWidth, markNoTrace } from "./charts";
import { paletteColor } from "./palette";
import type { Chunk, Trace, TraceRequest } from "./types";

/** Line color for instance `id`, the same in every iteration. */
export function instanceColor(id: number): string {
  return paletteColor(id);
}

/**
 * The chunks a request ran. Older traces lack `chunks` (or carry an empty
 * list): the whole request then counts as one chunk on `instance`.
 */
export function requestChunks(r: TraceRequest): Chunk[] {
  return Array.isArray(r.chunks) && r.chunks.length > 0
    ? r.chunks
    : [[r.instance, r.start_s, r.finish_s, r.output_tokens]];
}

/**
 * Running requests per instance as a step function, by a sorted sweep over
 * chunk intervals (+1 at start, -1 at finish). Returns the instance ids in
 * ascending order and uPlot data: x = event times (from 0 s), then one array
 * per instance with the count in effect from that x until the next.
 */
export function instanceOccupancy(requests: TraceRequest[]): {
  instances: number[];
  data: uPlot.AlignedData;
} {
  const events: [time: number, instance: number, delta: number][] = [];
  for (const r of requests) {
    for (const chunk of requestChunks(r)) {
      if (!Array.isArray(chunk)) continue;
      const [instance, start, finish] = chunk;
      if (!Number.isInteger(instance) || !Number.isFinite(start) || !Number.isFinite(finish)) continue;
      if (finish < start) continue;
      events.push([start, instance, 1], [finish, instance, -1]);
    }
  }
  // At equal times apply finishes first, so back-to-back chunks don't double count.
  events.sort((a, b) => a[0] - b[0] || a[2] - b[2]);

  const instances = [...new Set(events.map((e) => e[1]))].sort((a, b) => a - b);
  const column = new Map(instances.map((id, i) => [id, i]));
  const counts = instances.map(() => 0);
  const xs: number[] = [];
  const ys: number[][] = instances.map(() => []);
  const record = (t: number) => {
    xs.push(t);
    counts.forEach((c, i) => ys[i].push(c));
  };

  if (events.length > 0 && events[0][0] > 0) record(0);
  for (let k = 0; k < events.length; ) {
    const t = events[k][0];
    for (; k < events.length && events[k][0] === t; k++) counts[column.get(events[k][1])!] += events[k][2];
    record(t);
  }
  return { instances, data: [xs, ...ys] as uPlot.AlignedData };
}

/** The `#instance-timeline` chart; call show() with each new trace. */
export class TimelineChart {
  readonly section: HTMLElement;
  private readonly heading: HTMLHeadingElement;
  private readonly plot: uPlot;
  /** Instance ids of the current series, in series order. */
  private instances: number[] = [];

  /** Build the section and append it to `parent`. */
  constructor(parent: HTMLElement, height = CHART_HEIGHT) {
    const { section, heading, plot } = chartSection("Instance timeline");
    section.id = "instance-timeline";
    section.classList.add("wide");
    this.section = section;
    this.heading = heading;
    parent.append(section);

    this.plot = new uPlot(
      {
        width: Math.max(plot.clientWidth, 200),
        height,
        scales: {
          x: { time: false },
          y: { range: (_u, _min, max) => [0, Math.max(1, Math.ceil(max * 1.1))] },
        },
        axes: [
          { label: "seconds since rollout start" },
          { label: "running requests", size: 60, incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000] },
        ],
        series: [{ label: "t s" }],
      },
      [[]],
      plot,
    );
    fitWidth(this.plot, plot, height);
    markNoTrace(section, true);
  }

  /** Redraw from a trace, rebuilding the series when the instance set changes. */
  show(trace: Trace): void {
    markNoTrace(this.section, false);
    const { instances, data } = instanceOccupancy(trace.requests);
    this.heading.textContent = `Instance timeline — iteration ${trace.iteration}`;
    this.section.dataset.iteration = String(trace.iteration);
    this.section.dataset.instances = String(instances.length);

    const same =
      instances.length === this.instances.length && instances.every((id, i) => id === this.instances[i]);
    if (!same) {
      for (let i = this.instances.length; i >= 1; i--) this.plot.delSeries(i);
      instances.forEach((id) =>
        this.plot.addSeries({
          label: `instance ${id}`,
          stroke: instanceColor(id),
          width: 2,
          paths: uPlot.paths.stepped!({ align: 1 }),
          points: { show: false },
        }),
      );
      this.instances = instances;
    }
    this.plot.setData(data);
  }
}
