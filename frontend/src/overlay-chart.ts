// One metric of several runs overlaid in a single uPlot chart: one line per run
// (EMA-smoothed when smoothing is on, with the raw points drawn faintly behind). The legend is
// a tooltip of the hovered x's values, shown only while the cursor is on the plot (the page
// shows the run colours once, in its key); the tooltip sits on the side away from the cursor.
import uPlot from "uplot";
import type { Aligned } from "./align";
import type { MetricCatalog } from "./catalog";
import { chartSection, describe, fitWidth } from "./charts";
import { emaSmooth } from "./ema";
import { formatNumber, yAxis } from "./format";
import { withAlpha } from "./palette";
import type { CompareX } from "./types";

export const OVERLAY_HEIGHT = 260;
/** Above this many runs, lines are drawn 1 px wide instead of 2. */
const MANY_LINES = 8;
/** Charts with the same key move their cursors together (by x value). */
const SYNC_KEY = "umbra-compare";

/** One line of the chart. */
export interface OverlayLine {
  label: string;
  color: string;
}

const X_LABELS: Record<CompareX, string> = {
  step: "iteration",
  wall: "wall time",
  relative: "seconds since the run's first point",
};

function xAxis(x: CompareX): uPlot.Axis {
  return x === "step"
    ? // Iterations are integers: never put ticks at fractional steps.
      { label: X_LABELS.step, incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000] }
    : { label: X_LABELS[x] };
}

function xSeries(x: CompareX): uPlot.Series {
  if (x === "step") return { label: "iteration", value: (_u, v) => (v == null ? "—" : String(v)) };
  if (x === "relative") return { label: "t", value: (_u, v) => (v == null ? "—" : `${formatNumber(v)} s`) };
  return { label: "time" }; // uPlot's date format for time scales
}

/**
 * `section.compare-chart[data-metric][data-points]`: the overlay of `lines`
 * (aligned data, one y array per line) for one metric.
 */
export class OverlayChart {
  readonly section: HTMLElement;
  /** Finite points of all lines together (what the chart draws, raw). */
  readonly points: number;
  /** Resolves once uPlot has drawn the chart the first time. */
  readonly drawn: Promise<void>;
  private readonly plot: uPlot;
  private readonly observer: ResizeObserver;
  private readonly x: number[];
  private readonly raw: (number | null)[][];
  private smooth = 0;

  constructor(
    parent: HTMLElement,
    metric: string,
    catalog: MetricCatalog,
    xMode: CompareX,
    lines: OverlayLine[],
    data: Aligned,
    smooth: number,
  ) {
    this.x = data.x;
    this.raw = data.ys;
    this.smooth = smooth;
    this.points = data.counts.reduce((a, b) => a + b, 0);

    const badge = document.createElement("span");
    badge.className = "points";
    badge.title = "points drawn (after server-side downsampling)";
    badge.textContent = `${this.points} pts`;
    const { section, heading, plot } = chartSection(catalog.title(metric), badge, metric);
    heading.title = describe(catalog, metric);
    section.classList.add("compare-chart");
    section.dataset.metric = metric;
    section.dataset.points = String(this.points);
    if (this.points === 0) section.classList.add("empty");
    this.section = section;
    parent.append(section);

    let drawnOnce: () => void = () => {};
    this.drawn = new Promise((resolve) => (drawnOnce = resolve));

    const n = lines.length;
    // Hairlines once there are many runs: clearer when they overlap, and much
    // cheaper to rasterize (software canvas) than 2 px strokes.
    const width = n > MANY_LINES ? 1 : 2;
    const main: uPlot.Series[] = lines.map((line) => ({
      label: line.label,
      stroke: line.color,
      width,
      spanGaps: true,
      value: (_u, v) => formatNumber(v),
    }));
    // The raw lines come after all main lines, so series i and i + n are one run.
    const raw: uPlot.Series[] = lines.map((line) => ({
      label: `${line.label} (raw)`,
      stroke: withAlpha(line.color, 0.25),
      width: 1,
      spanGaps: true,
      show: smooth > 0,
      points: { show: false },
      value: (_u, v) => formatNumber(v),
    }));

    this.plot = new uPlot(
      {
        width: Math.max(plot.clientWidth, 200),
        height: OVERLAY_HEIGHT,
        scales: { x: { time: xMode === "wall" } },
        axes: [xAxis(xMode), yAxis(64)],
        series: [xSeries(xMode), ...main, ...raw],
        legend: { show: true, live: true },
        cursor: {
          sync: { key: SYNC_KEY },
          // Runs have points at different x: show each run's nearest point (within 40 px).
          hover: { skip: [null, undefined], prox: 40 },
          focus: { prox: 16 },
        },
        focus: { alpha: 0.35 },
        hooks: {
          draw: [() => drawnOnce()],
          // Values on hover only: the legend shows while the cursor is on a point.
          setCursor: [(u) => this.hover(u)],
          // A raw line follows its run's main line (legend toggles, synced charts).
          setSeries: [(u, idx, opts) => opts.show != null && this.syncRaw(u, idx)],
        },
      },
      this.data(),
      plot,
    );
    // Raw lines share the run's legend entry: hide their own rows.
    const rows = this.plot.root.querySelectorAll<HTMLElement>(".u-legend .u-series");
    for (let i = n + 1; i < rows.length; i++) rows[i].style.display = "none";
    this.observer = fitWidth(this.plot, plot, OVERLAY_HEIGHT);
  }

  /** Show the legend tooltip while a point is hovered, on the half of the plot away from the cursor. */
  private hover(u: uPlot): void {
    // Only the hovered chart: the charts' cursors move together (sync), their tooltips do not.
    const on = u.cursor.idx != null && (u.cursor.left ?? -1) >= 0 && this.section.matches(":hover");
    this.section.classList.toggle("hovering", on);
    if (on) {
      const right = (u.cursor.left ?? 0) < u.over.clientWidth / 2;
      this.section.classList.toggle("legend-right", right);
      this.section.classList.toggle("legend-left", !right);
    }
  }

  /** Show or hide run `i`'s line (and its raw line): the page key's toggles. */
  setRunShown(i: number, show: boolean): void {
    if (this.plot.series[i + 1]?.show !== show) this.plot.setSeries(i + 1, { show });
  }

  /** [x, smoothed lines..., raw lines...] for the current smoothing. */
  private data(): uPlot.AlignedData {
    const smoothed = this.raw.map((y) => emaSmooth(y, this.smooth));
    return [this.x, ...smoothed, ...this.raw] as uPlot.AlignedData;
  }

  /** Show raw line(s) exactly when smoothing is on and their run's main line is shown. */
  private syncRaw(u: uPlot, idx: number | null): void {
    const n = this.raw.length;
    for (let i = 1; i <= n; i++) {
      if (idx !== null && idx !== i && idx !== i + n) continue;
      const want = this.smooth > 0 && u.series[i].show !== false;
      if (u.series[i + n].show !== want) u.setSeries(i + n, { show: want }, false);
    }
  }

  /** Redraw with EMA factor `alpha` (no refetch). */
  setSmooth(alpha: number): void {
    if (alpha === this.smooth) return;
    this.smooth = alpha;
    this.plot.batch(() => {
      this.plot.setData(this.data());
      this.syncRaw(this.plot, null);
    });
  }

  destroy(): void {
    this.observer.disconnect();
    this.plot.destroy();
    this.section.remove();
  }
}
