// The run page header's headline numbers (ours): value and ratio to the reference run,
// from GET data-headline-url (telemetry.headline).
import { formatNumber, formatRatio } from "./format";

export interface HeadlineResponse {
  values: Record<string, number>;
  ratios: Record<string, number>;
  reference: { id: number; policy: string; name: string; url: string; values: Record<string, number>;
               /** The reference shared the cluster with this run while it ran: ratios not comparable. */
               concurrent?: boolean } | null;
}

/** The headline keys, their label and unit, and which way is better (for the ratio's colour). */
export const HEADLINE_ITEMS: { key: string; label: string; unit: string; better: "higher" | "lower" }[] = [
  { key: "throughput", label: "Rollout throughput", unit: "tok/s", better: "higher" },
  { key: "tail", label: "Tail time", unit: "s", better: "lower" },
  { key: "accept_len", label: "Accept length", unit: "tok/step", better: "higher" },
  { key: "reward", label: "Reward", unit: "", better: "higher" },
  { key: "val_accuracy", label: "Val accuracy", unit: "", better: "higher" },
  { key: "accuracy", label: "Train accuracy", unit: "", better: "higher" },
];

export interface HeadlineCell {
  key: string;
  label: string;
  value: string;
  ratio: string;
  /** "good", "bad", "" (no ratio, or within 2% of the reference) or "concurrent" (the reference
   *  ran at the same time on the same cluster, so the ratio is not a verdict). */
  verdict: string;
}

/** The cells to show: only numbers the run logged; a ratio only where the server gave one. */
export function headlineCells(data: HeadlineResponse): HeadlineCell[] {
  return HEADLINE_ITEMS.filter((item) => data.values[item.key] != null).map((item) => {
    const r = data.ratios[item.key];
    let verdict = "";
    if (r != null && data.reference?.concurrent) verdict = "concurrent";
    else if (r != null && Math.abs(r - 1) > 0.02) verdict = (r > 1) === (item.better === "higher") ? "good" : "bad";
    const unit = item.unit ? ` ${item.unit}` : "";
    return { key: item.key, label: item.label, value: `${formatNumber(data.values[item.key])}${unit}`,
             ratio: r != null ? formatRatio(r) : "", verdict };
  });
}

/** Draw the headline into `dl` (a `<dl>` per number: label, value and ratio) with a note naming the reference. */
export function renderHeadline(dl: HTMLElement, data: HeadlineResponse): void {
  const items: HTMLElement[] = [];
  for (const cell of headlineCells(data)) {
    const box = document.createElement("dl"); // one term and its value per item
    box.className = "headline-item";
    box.dataset.key = cell.key;
    const dt = document.createElement("dt");
    dt.textContent = cell.label;
    const dd = document.createElement("dd");
    const value = document.createElement("span");
    value.className = "value";
    value.textContent = cell.value;
    dd.append(value);
    if (cell.ratio) {
      const ratio = document.createElement("span");
      ratio.className = `ratio ${cell.verdict}`;
      ratio.textContent = cell.ratio;
      ratio.title = `vs ${data.reference?.name} (${data.reference?.policy})`;
      dd.append(" ", ratio);
    }
    box.append(dt, dd);
    items.push(box);
  }
  if (data.reference && items.length) {
    const note = document.createElement("div");
    note.className = "headline-ref sub";
    const link = document.createElement("a");
    link.href = data.reference.url;
    link.textContent = `${data.reference.name} (${data.reference.policy})`;
    note.append("ratios vs ", link, ", same config");
    if (data.reference.concurrent) {
      const warn = document.createElement("strong");
      warn.className = "concurrent-warning";
      warn.textContent = " · ran concurrently on the same cluster: throughput ratios are not comparable";
      note.append(warn);
    }
    items.push(note);
  }
  if (!data.reference && items.length) {
    const note = document.createElement("div");
    note.className = "headline-ref sub";
    note.textContent = "no ratios: no verl or static-group run of this config to compare with yet (the form's A/B button runs one)";
    items.push(note);
  }
  dl.replaceChildren(...items);
}
