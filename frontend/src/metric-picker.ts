// The compare page's metric picker (ours): a collapsible list of the catalogue's metrics,
// by section, one checkbox each, instead of a free-text box of names.
import type { MetricCatalog } from "./catalog";

export interface PickerGroup {
  section: string;
  options: { name: string; title: string; checked: boolean }[];
}

/**
 * Every pickable metric (the catalogue's fixed names, the `reward/extra/<key>` names the
 * compared runs logged, `logged`, and any shown name it lacks), by section; the extra keys by name.
 */
export function pickerGroups(catalog: MetricCatalog, shown: string[], logged: string[] = []): PickerGroup[] {
  const names = catalog.doc.metrics.filter((m) => !m.name.includes("{")).map((m) => m.name);
  for (const name of [...logged].sort()) if (!names.includes(name)) names.push(name);
  for (const name of shown) if (!names.includes(name)) names.push(name);
  const on = new Set(shown);
  return catalog.groupBySection(names).map(({ section, names: list }) => ({
    section,
    options: list.map((name) => ({ name, title: catalog.title(name), checked: on.has(name) })),
  }));
}

/** `shown` with `name` added (at the end) or removed; never empty (null = the API's defaults). */
export function toggleMetric(shown: string[], name: string, on: boolean): string[] | null {
  const next = on ? (shown.includes(name) ? shown : [...shown, name]) : shown.filter((n) => n !== name);
  return next.length > 0 ? next : null;
}

/** The picker: a <details> whose summary counts the metrics shown; `onChange` gets the new list. */
export class MetricPicker {
  readonly root = document.createElement("details");
  private readonly summary = document.createElement("summary");
  private readonly body = document.createElement("div");
  private shown: string[] = [];
  private logged: string[] = [];

  constructor(private readonly catalog: MetricCatalog, private readonly onChange: (m: string[] | null) => void) {
    this.root.id = "metric-picker";
    this.root.className = "metric-picker";
    this.body.className = "metric-picker-body";
    this.root.append(this.summary, this.body);
  }

  /** Redraw with `shown` ticked and `logged` offered (reward extras of the compared runs; kept if not given). */
  set(shown: string[], logged: string[] = this.logged): void {
    this.shown = shown;
    this.logged = logged;
    this.summary.textContent = `metrics (${shown.length})`;
    const groups = pickerGroups(this.catalog, shown, logged).map((group) => {
      const box = document.createElement("fieldset");
      const legend = document.createElement("legend");
      legend.textContent = group.section;
      box.append(legend);
      for (const opt of group.options) {
        const label = document.createElement("label");
        const input = document.createElement("input");
        Object.assign(input, { type: "checkbox", value: opt.name, checked: opt.checked });
        input.dataset.metric = opt.name;
        input.addEventListener("change", () => this.onChange(toggleMetric(this.shown, opt.name, input.checked)));
        label.append(input, ` ${opt.title}`);
        label.title = opt.name;
        box.append(label);
      }
      return box;
    });
    this.body.replaceChildren(...groups);
  }
}
