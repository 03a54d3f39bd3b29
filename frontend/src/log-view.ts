// The run page's job log (ours): ANSI removed, searchable, updated live by "log" messages.
import { logLines } from "./ansi";

/** Keeps `#log-tail` showing the latest tail, filtered by `#log-search`. */
export class LogView {
  private raw: string;

  constructor(private readonly pre: HTMLElement, private readonly search: HTMLInputElement | null,
              private readonly matches: HTMLElement | null, private readonly count: HTMLElement | null) {
    this.raw = pre.textContent ?? "";
    search?.addEventListener("input", () => this.render());
    this.render();
  }

  /** Show a new tail (a "log" message). */
  update(tail: string): void {
    this.raw = tail;
    this.render();
  }

  private render(): void {
    const query = this.search?.value ?? "";
    const lines = logLines(this.raw, query);
    const nodes = lines.map((line) => {
      const span = document.createElement("span");
      span.className = line.error ? "log-line error" : "log-line";
      span.textContent = line.text + "\n";
      return span;
    });
    const atBottom = this.pre.scrollTop + this.pre.clientHeight >= this.pre.scrollHeight - 4;
    this.pre.replaceChildren(...nodes);
    if (atBottom) this.pre.scrollTop = this.pre.scrollHeight; // follow the tail unless the reader scrolled up
    const total = this.raw.trim() ? logLines(this.raw).length : 0;
    if (this.count) this.count.textContent = total ? `${total} lines` : "empty";
    if (this.matches) this.matches.textContent = query.trim() ? `${lines.length} matching` : "";
  }
}
