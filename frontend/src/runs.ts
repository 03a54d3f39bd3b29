// Entry point of the team's runs page: compare the checked runs, and follow every run's
// state and latest numbers over the team's WebSocket (/ws/teams/<slug>/runs/).
import "./runs.css";
import { durationText, etaText, percentDone, rowUpdates, unlistedText } from "./runs-table";
import { connectSocket, wsUrl } from "./socket";
import type { SocketMessage } from "./types";

function applyRow(table: HTMLElement, msg: SocketMessage): void {
  if (msg.type !== "run_row") return;
  const row = table.querySelector<HTMLTableRowElement>(`tr[data-run="${msg.run}"]`);
  if (!row) return noteUnlisted(msg.run); // a new run, or one on another page or filtered out
  const accuracy = row.querySelector<HTMLElement>('[data-cell="accuracy"]');
  for (const [cell, text] of Object.entries(rowUpdates(msg, accuracy?.dataset.source === "val"))) {
    const el = cell === "val_accuracy" ? accuracy : row.querySelector<HTMLElement>(`[data-cell="${cell}"]`);
    if (!el) continue;
    el.textContent = text;
    if (cell === "val_accuracy") {
      const sub = document.createElement("span");
      sub.className = "sub";
      sub.textContent = "val";
      el.append(" ", sub);
      el.dataset.source = "val";
    }
    if (cell === "state") {
      el.className = `badge state-${text}`;
      row.dataset.state = text;
      row.querySelector(".queue-position")?.remove();
    }
    el.classList.add("updated");
    window.setTimeout(() => el.classList.remove("updated"), 1200);
  }
  const done = Number(row.querySelector('[data-cell="done"]')?.textContent ?? 0);
  const pct = percentDone(done, Number(row.dataset.total), row.dataset.state ?? "");
  const bar = row.querySelector<HTMLElement>(".progress span");
  if (bar) bar.style.width = `${pct.toFixed(0)}%`;
  bar?.parentElement?.setAttribute("aria-valuenow", pct.toFixed(0));
  const mean = row.dataset.meanIterationS ? Number(row.dataset.meanIterationS) : null;
  const eta = row.querySelector<HTMLElement>('[data-cell="eta"]');
  if (eta) eta.textContent = etaText(Number(row.dataset.total), done, mean, row.dataset.state ?? "");
  if (msg.state && !["queued", "dispatching", "running"].includes(msg.state) && !row.dataset.finished) {
    row.dataset.finished = String(Date.now() / 1000); // stops the Duration clock below
  }
  if (msg.state === "running" && !row.dataset.started) row.dataset.started = String(Date.now() / 1000);
}

/** Running rows' Duration cells tick once a second (the server drew them at page load). */
function tickDurations(table: HTMLElement): void {
  const now = Date.now() / 1000;
  for (const row of table.querySelectorAll<HTMLTableRowElement>("tr[data-started]")) {
    if (row.dataset.finished) continue;
    const cell = row.querySelector<HTMLElement>('[data-cell="duration"]');
    if (cell) cell.textContent = durationText(Number(row.dataset.started), null, now);
  }
}

const unlisted = new Set<number>();

/** A run the table does not list changed state or logged numbers: say so, with a reload link
 *  (new runs appear at the top of the default order, so a reload shows them). */
function noteUnlisted(run: number): void {
  const note = document.getElementById("unlisted-runs");
  if (!note) return;
  unlisted.add(run);
  note.querySelector("span")!.textContent = unlistedText([...unlisted]);
  note.querySelector("a")!.href = window.location.href;
  note.hidden = false;
}

function wireSelection(form: HTMLFormElement): void {
  const button = form.querySelector<HTMLButtonElement>("#compare-button");
  const count = form.querySelector<HTMLElement>("#selected-count");
  const update = () => {
    const n = form.querySelectorAll('input[name="runs"]:checked').length;
    if (button) button.disabled = n < 2;
    if (count) count.textContent = n ? `${n} selected` : "select two or more runs to compare";
  };
  form.addEventListener("change", update);
  update();
}

const table = document.getElementById("runs-table");
const form = document.getElementById("compare-selected") as HTMLFormElement | null;
if (form) wireSelection(form);
if (table) window.setInterval(() => tickDurations(table), 1000);
if (table?.dataset.wsPath) {
  connectSocket(wsUrl(table.dataset.wsPath), { message: (msg) => applyRow(table, msg) });
}
