// What-if page charts (ours): one latency-CDF overlay across policies, and each policy's
// instance timeline as a band (min / median / max running requests across instances)
// with the per-instance lines on demand, under a one-line legend.
import uPlot from "uplot";
import { alignSeries } from "./align";
import { latencyCdf } from "./cdf";
import { CHART_HEIGHT, chartSection, fitWidth } from "./charts";
import { paletteColor } from "./palette";
import { instanceColor, instanceOccupancy } from "./timeline";
import type { Trace } from "./types";

/** Per-x min, median and max of the per-instance counts (`ys`: one array per instance). */
export function occupancyBand(ys: ArrayLike<number>[], length: number): [number[], number[], number[]] {
  const lo: number[] = [], mid: number[] = [], hi: number[] = [];
  for (let i = 0; i < length; i++) {
    const col = ys.map((y) => y[i]).sort((a, b) => a - b);
    if (col.length === 0) {
      lo.push(0); mid.push(0); hi.push(0);
      continue;
    }
    const m = col.length >> 1;
    lo.push(col[0]);
    hi.push(col[col.length - 1]);
    mid.push(col.length % 2 ? col[m] : (col[m - 1] + col[m]) / 2);
  }
  return [lo, mid, hi];
}

/** The CDF of each policy's latencies on one shared x (null where a policy has no point). */
export function cdfOverlayData(traces: [string, Trace][]): uPlot.AlignedData {
  const aligned = alignSeries(traces.map(([, t]) => {
    const [x, y] = latencyCdf(t.requests);
    return { x, y };
  }));
  return [aligned.x, ...aligned.ys] as uPlot.AlignedData;
}

function legendLine(items: [string, string][], extra?: HTMLElement): HTMLElement {
  const p = document.createElement("p");
  p.className = "compact-legend";
  for (const [label, color] of items) {
    const key = document.createElement("span");
    key.className = "key";
    const swatch = document.createElement("span");
    swatch.className = "swatch";
    swatch.style.background = color;
    key.append(swatch, label);
    p.append(key);
  }
  if (extra) p.append(extra);
  return p;
}

/** One full-width chart: every policy's request-latency CDF. */
export function cdfOverlay(parent: HTMLElement, traces: [string, Trace][]): HTMLElement {
  const { section, plot } = chartSection("Request latency CDF — all policies (simulated)");
  section.id = "cdf-overlay";
  section.classList.add("wide", "full");
  parent.append(section);
  const colors = traces.map((_, i) => paletteColor(i));
  const u = new uPlot({
    width: Math.max(plot.clientWidth, 200),
    height: CHART_HEIGHT + 60,
    legend: { show: false },
    scales: { x: { time: false }, y: { range: [0, 1] } },
    axes: [{ label: "latency (s)" }, { label: "fraction of requests done", size: 60 }],
    series: [{ label: "latency s" }, ...traces.map(([name], i) => ({
      label: name, stroke: colors[i], width: 2, spanGaps: true,
      paths: uPlot.paths.stepped!({ align: 1 }), points: { show: false },
    }))],
  }, cdfOverlayData(traces), plot);
  fitWidth(u, plot, CHART_HEIGHT + 60);
  section.append(legendLine(traces.map(([name], i) => [name, colors[i]])));
  section.dataset.policies = String(traces.length);
  return section;
}

/** A policy's instance timeline: the band across instances, each instance's line on demand. */
export function bandTimeline(parent: HTMLElement, name: string, trace: Trace): HTMLElement {
  const { section, plot } = chartSection(`Instance timeline — ${name} (simulated)`);
  section.id = `timeline-${name}`;
  section.classList.add("timeline-band");
  parent.append(section);
  const { instances, data } = instanceOccupancy(trace.requests);
  const xs = data[0] as number[];
  const ys = data.slice(1) as number[][];
  const [lo, mid, hi] = occupancyBand(ys, xs.length);
  const stepped = () => uPlot.paths.stepped!({ align: 1 });
  const u = new uPlot({
    width: Math.max(plot.clientWidth, 200),
    height: CHART_HEIGHT,
    legend: { show: false },
    scales: { x: { time: false }, y: { range: (_u, _min, max) => [0, Math.max(1, Math.ceil(max * 1.1))] } },
    axes: [{ label: "seconds since rollout start" },
      { label: "running requests", size: 60, incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000] }],
    bands: [{ series: [3, 1], fill: "rgba(37, 99, 235, 0.15)" }],
    series: [
      { label: "t s" },
      { label: "min", stroke: "rgba(37, 99, 235, 0.5)", width: 1, paths: stepped(), points: { show: false } },
      { label: "median", stroke: "#1d4ed8", width: 2, paths: stepped(), points: { show: false } },
      { label: "max", stroke: "rgba(37, 99, 235, 0.5)", width: 1, paths: stepped(), points: { show: false } },
      ...instances.map((id) => ({ label: `instance ${id}`, stroke: instanceColor(id), width: 1, show: false,
        paths: stepped(), points: { show: false } })),
    ],
  }, [xs, lo, mid, hi, ...ys] as uPlot.AlignedData, plot);
  fitWidth(u, plot);
  const toggle = document.createElement("label");
  toggle.className = "instance-toggle";
  const box = document.createElement("input");
  box.type = "checkbox";
  box.addEventListener("change", () => {
    u.batch(() => instances.forEach((_, i) => u.setSeries(4 + i, { show: box.checked })));
    section.dataset.instanceLines = box.checked ? "shown" : "hidden";
  });
  toggle.append(box, ` each of the ${instances.length} instances`);
  section.dataset.instances = String(instances.length);
  section.dataset.instanceLines = "hidden";
  section.append(legendLine([["median", "#1d4ed8"], ["min–max across instances", "rgba(37, 99, 235, 0.35)"]], toggle));
  return section;
}
