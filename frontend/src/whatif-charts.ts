// What-if page charts (ours): bars of one value per policy (each with its value written on it),
// one latency-CDF overlay across policies, and each policy's instance timeline as a band
// (min / median / max running requests across instances) with the per-instance lines on
// demand, under a one-line legend.
import uPlot from "uplot";
import { alignSeries } from "./align";
import { latencyCdf } from "./cdf";
import { CHART_HEIGHT, chartSection, fitWidth } from "./charts";
import { formatNumber, formatRatio } from "./format";
import { paletteColor } from "./palette";
import { instanceColor, instanceOccupancy } from "./timeline";
import type { Trace } from "./types";

/** A bar's policy name, broken after its first hyphen when long ("seer-no-spec" -> "seer-\nno-spec"),
 * so that neighbouring labels do not overlap. */
export function barLabel(name: string): string {
  const cut = name.indexOf("-");
  return name.length > 10 && cut > 0 ? `${name.slice(0, cut + 1)}\n${name.slice(cut + 1)}` : name;
}

/** The text written over a bar: a ratio as "1.19×", a plain value as formatNumber does; "—" without one. */
export function barValueText(v: number | null | undefined, ratio: boolean): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return "—";
  return ratio ? formatRatio(v) : formatNumber(v);
}

/** The heights bars are drawn at: a positive value below `minFrac` of the axis top (`top`) is
 * raised to it so that a tiny bar (0.01 of 1) stays visible; zero, negative and missing stay 0. */
export function visibleBarHeights(values: (number | null | undefined)[], top: number, minFrac = 0.02): number[] {
  const floor = top * minFrac;
  return values.map((v) => (v === null || v === undefined || !Number.isFinite(v) || v <= 0 ? 0 : Math.max(v, floor)));
}

/** The top of a bar chart's y axis: room above the tallest bar for its value label (at least 1.1, for ratios near 1). */
export function barTop(values: (number | null | undefined)[], ratio: boolean): number {
  const max = Math.max(0, ...values.map((v) => (v === null || v === undefined || !Number.isFinite(v) ? 0 : v)));
  return ratio ? Math.max(1.1, max * 1.18) : max > 0 ? max * 1.18 : 1;
}

/** Bars of one value per policy (x = policy index), each with its value written above it;
 * `ratio`: the values are ratios to a reference policy (written "1.19×"). */
export function barChart(parent: HTMLElement, title: string, names: string[], values: (number | null)[],
  ratio: boolean): HTMLElement {
  const { section, plot } = chartSection(title);
  section.classList.add("bars");
  parent.append(section);
  const top = barTop(values, ratio);
  const heights = visibleBarHeights(values, top);
  const color = paletteColor(0);
  const drawValues = (u: uPlot) => {
    const ctx = u.ctx;
    const px = uPlot.pxRatio;
    ctx.save();
    ctx.font = `${12 * px}px system-ui, sans-serif`;
    ctx.textAlign = "center";
    ctx.textBaseline = "bottom";
    ctx.fillStyle = "#1e293b";
    names.forEach((_, i) => {
      const x = u.valToPos(i, "x", true);
      const y = u.valToPos(heights[i], "y", true);
      ctx.fillText(barValueText(values[i], ratio), x, y - 3 * px);
    });
    ctx.restore();
  };
  const u = new uPlot(
    {
      width: Math.max(plot.clientWidth, 200),
      height: CHART_HEIGHT,
      legend: { show: false },
      cursor: { show: false },
      scales: { x: { time: false, range: [-0.5, names.length - 0.5] }, y: { range: [0, top] } },
      axes: [
        { values: (_u, splits) => splits.map((s) => (Number.isInteger(s) && names[s] !== undefined ? barLabel(names[s]) : "")),
          size: 52, font: "12px system-ui, sans-serif", grid: { show: false } },
        { size: 60, values: (_u, splits) => splits.map((s) => (ratio ? `${+s.toFixed(4)}×` : formatNumber(s))) },
      ],
      series: [{}, { label: title, stroke: color, fill: color + "99", paths: uPlot.paths.bars!({ size: [0.6, 80] }),
        points: { show: false } }],
      hooks: { draw: [drawValues] },
    },
    [names.map((_, i) => i), heights],
    plot,
  );
  fitWidth(u, plot);
  section.dataset.values = values.map((v) => barValueText(v, ratio)).join(" ");
  return section;
}

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

/** The latest chunk end over `traces` (s): the policies' timelines share this x range, so a
 *  shorter rollout reads shorter. */
export function timelineEnd(traces: Trace[]): number {
  let end = 0;
  for (const t of traces) {
    const xs = instanceOccupancy(t.requests).data[0] as number[];
    if (xs.length) end = Math.max(end, xs[xs.length - 1]);
  }
  return end;
}

/** A policy's instance timeline: the band across instances, each instance's line on demand;
 *  x from 0 to `xMax` where given (the longest policy's rollout). */
export function bandTimeline(parent: HTMLElement, name: string, trace: Trace, xMax?: number): HTMLElement {
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
    scales: { x: { time: false, range: (_u, min, max) => (xMax && xMax > 0 ? [0, xMax] : [min, max]) },
      y: { range: (_u, _min, max) => [0, Math.max(1, Math.ceil(max * 1.1))] } },
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
