// The dashboard's event log table (#event-log): rows pushed live are appended to the
// server-rendered ones.

/** Append one row (time, what, why) to the event log; job notes open the log. */
export function appendEvent(kind: string, what: string, reason: string, at?: string): void {
  const table = document.getElementById("event-log");
  if (!table) return;
  const row = document.createElement("tr");
  row.className = `event-${kind}`;
  const when = at ? new Date(at) : new Date();
  for (const text of [when.toISOString().slice(11, 19), what, reason]) {
    const cell = document.createElement("td");
    cell.textContent = text; // never innerHTML: reasons come from the job
    row.appendChild(cell);
  }
  table.appendChild(row);
  if (kind === "job") (document.getElementById("events") as HTMLDetailsElement | null)?.setAttribute("open", "");
}
