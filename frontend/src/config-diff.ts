// The #config-diff table: the config keys whose values differ, one column per run.
import { MISSING } from "./format";
import type { CompareResponse } from "./types";

/** A config value as text; absent (null, as the API reports a missing key) → "—". */
function show(value: unknown): string {
  if (value === undefined || value === null) return MISSING;
  if (typeof value === "string") return value;
  return JSON.stringify(value);
}

/** Fill `table` from `data.config_diff` (keys as rows, runs as columns). */
export function renderConfigDiff(table: HTMLTableElement, data: CompareResponse): void {
  const keys = data.config_diff?.keys ?? [];
  const values = data.config_diff?.values ?? {};

  const head = document.createElement("tr");
  const corner = document.createElement("th");
  corner.textContent = "config key";
  head.append(corner);
  for (const run of data.runs) {
    const th = document.createElement("th");
    th.textContent = run.label || `#${run.id}`;
    th.dataset.runId = String(run.id);
    if (run.id === data.reference) th.classList.add("reference");
    head.append(th);
  }
  const thead = document.createElement("thead");
  thead.append(head);

  const tbody = document.createElement("tbody");
  for (const key of keys) {
    const tr = document.createElement("tr");
    tr.dataset.key = key;
    const th = document.createElement("th");
    th.textContent = key;
    tr.append(th);
    for (const run of data.runs) {
      const td = document.createElement("td");
      td.textContent = show(values[String(run.id)]?.[key]);
      tr.append(td);
    }
    tbody.append(tr);
  }
  if (keys.length === 0) {
    const tr = document.createElement("tr");
    const td = document.createElement("td");
    td.colSpan = data.runs.length + 1;
    td.className = "none";
    td.textContent = "The runs' configs are identical.";
    tr.append(td);
    tbody.append(tr);
  }
  table.replaceChildren(thead, tbody);
}
