// The compare page's controls: x axis, EMA smoothing, reference run, metrics, CSV links.
import type { MetricCatalog } from "./catalog";
import { MetricPicker } from "./metric-picker";
import { MAX_SMOOTH, X_MODES, clampSmooth, type CompareView } from "./view";
import type { CompareResponse, CompareX } from "./types";

export interface ControlHandlers {
  x: (x: CompareX) => void;
  /** Called on every slider movement (redraw only). */
  smooth: (alpha: number) => void;
  /** null = let the server pick. */
  ref: (id: string | null) => void;
  /** null = the API's default metrics. */
  metrics: (metrics: string[] | null) => void;
}

const X_TITLES: Record<CompareX, string> = { step: "iteration", wall: "wall time", relative: "relative time" };

function field(label: string, control: HTMLElement, ...extra: HTMLElement[]): HTMLLabelElement {
  const el = document.createElement("label");
  el.className = "field";
  const caption = document.createElement("span");
  caption.textContent = label;
  el.append(caption, control, ...extra);
  return el;
}

function option(value: string, text: string): HTMLOptionElement {
  const o = document.createElement("option");
  o.value = value;
  o.textContent = text;
  return o;
}

function link(id: string, text: string): HTMLAnchorElement {
  const a = document.createElement("a");
  a.id = id;
  a.textContent = text;
  a.className = "csv";
  return a;
}

export class Controls {
  readonly root: HTMLElement;
  private readonly xSelect: HTMLSelectElement;
  private readonly smooth: HTMLInputElement;
  private readonly smoothValue: HTMLOutputElement;
  private readonly reference: HTMLSelectElement;
  private readonly metrics: MetricPicker;
  private readonly summaryCsv: HTMLAnchorElement;
  private readonly seriesCsv: HTMLAnchorElement;

  constructor(view: CompareView, handlers: ControlHandlers, catalog: MetricCatalog) {
    this.root = document.createElement("form");
    this.root.className = "compare-controls";
    this.root.addEventListener("submit", (e) => e.preventDefault());

    this.xSelect = document.createElement("select");
    this.xSelect.id = "x-axis";
    for (const x of X_MODES) this.xSelect.append(option(x, X_TITLES[x]));
    this.xSelect.value = view.x;
    this.xSelect.addEventListener("change", () => handlers.x(this.xSelect.value as CompareX));

    this.smooth = document.createElement("input");
    Object.assign(this.smooth, { type: "range", id: "smooth", min: "0", max: String(MAX_SMOOTH), step: "0.01" });
    this.smooth.value = String(view.smooth);
    this.smoothValue = document.createElement("output");
    this.smoothValue.id = "smooth-value";
    this.smoothValue.htmlFor.add("smooth");
    this.showSmooth(view.smooth);
    this.smooth.addEventListener("input", () => {
      const alpha = clampSmooth(Number(this.smooth.value));
      this.showSmooth(alpha);
      handlers.smooth(alpha);
    });

    this.reference = document.createElement("select");
    this.reference.id = "reference";
    this.setRunOptions(view.runs.map((id) => ({ id, label: `#${id}` })), view.ref, null);
    this.reference.addEventListener("change", () => handlers.ref(this.reference.value || null));

    this.metrics = new MetricPicker(catalog, handlers.metrics);
    this.metrics.set(view.metrics ?? []);

    this.summaryCsv = link("summary-csv", "summary.csv");
    this.seriesCsv = link("series-csv", "series.csv");
    const csv = document.createElement("span");
    csv.className = "field downloads";
    csv.append("Download ", this.summaryCsv, " · ", this.seriesCsv);

    this.root.append(
      field("x axis", this.xSelect),
      field("smoothing", this.smooth, this.smoothValue),
      field("reference", this.reference),
      csv,
      this.metrics.root,
    );
  }

  private showSmooth(alpha: number): void {
    this.smoothValue.value = alpha.toFixed(2);
  }

  /** Reference options: "auto" (naming the server's pick once known) and each run. */
  private setRunOptions(runs: { id: string; label: string }[], selected: string | null, auto: string | null): void {
    const options = [option("", auto ? `auto (${auto})` : "auto")];
    for (const run of runs) options.push(option(run.id, run.label));
    this.reference.replaceChildren(...options);
    this.reference.value = selected && runs.some((r) => r.id === selected) ? selected : "";
  }

  /** Sync the controls with a response: run labels, the reference used, the metrics shown. */
  update(view: CompareView, data: CompareResponse): void {
    const runs = data.runs.map((r) => ({ id: String(r.id), label: r.label || `#${r.id}` }));
    const auto = runs.find((r) => r.id === String(data.reference))?.label ?? null;
    this.setRunOptions(runs, view.ref, auto);
    this.metrics.set(data.metrics, data.reward_extras ?? []);
  }

  /** Point the CSV links at the same query as the API request. */
  setCsv(summaryUrl: string | undefined, seriesUrl: string | undefined, query: string): void {
    for (const [a, base] of [[this.summaryCsv, summaryUrl], [this.seriesCsv, seriesUrl]] as const) {
      if (base) a.href = `${base}${base.includes("?") ? "&" : "?"}${query}`;
      else a.removeAttribute("href");
      a.hidden = !base;
    }
  }
}
