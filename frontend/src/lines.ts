// The points of one chart, one line per key ("" for a chart of a single metric; an actor or
// a node for a family's chart), on one shared, sorted x array: the layout uPlot draws.

/** Natural order of line keys: "rollout-2" before "rollout-10". */
export function compareKeys(a: string, b: string): number {
  return a.localeCompare(b, "en", { numeric: true });
}

export class LineSet {
  private steps: number[] = [];
  /** Values per key, as long as `steps`, null where the line has no point. */
  private readonly values = new Map<string, (number | null)[]>();
  /** Keys in the order they first got a point (each keeps its colour). */
  private readonly arrival: string[] = [];

  /** Number of distinct x values. */
  get size(): number {
    return this.steps.length;
  }

  /** The line keys in natural order. */
  keys(): string[] {
    return [...this.values.keys()].sort(compareKeys);
  }

  /** Where `key` first appeared (0, 1, ...), -1 if it has no line. */
  arrivalIndex(key: string): number {
    return this.arrival.indexOf(key);
  }

  /** Set `key`'s value at `step` (replacing one there); returns true when `key` is a new line. */
  upsert(step: number, value: number, key = ""): boolean {
    const { steps } = this;
    let lo = 0;
    let hi = steps.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (steps[mid] < step) lo = mid + 1;
      else hi = mid;
    }
    if (steps[lo] !== step) {
      steps.splice(lo, 0, step);
      for (const line of this.values.values()) line.splice(lo, 0, null);
    }
    let line = this.values.get(key);
    const added = line === undefined;
    if (!line) {
      line = new Array<number | null>(steps.length).fill(null);
      this.values.set(key, line);
      this.arrival.push(key);
    }
    line[lo] = value;
    return added;
  }

  /** The value of `key` at the highest x it has a point at. */
  latest(key = ""): number | undefined {
    const line = this.values.get(key);
    for (let i = (line?.length ?? 0) - 1; i >= 0; i--) if (line![i] !== null) return line![i]!;
    return undefined;
  }

  /** `[x, line of keys[0], line of keys[1], ...]` for uPlot, lines in the order of `keys`. */
  data(keys: string[] = this.keys()): [number[], ...(number | null)[][]] {
    return [this.steps, ...keys.map((k) => this.values.get(k) ?? new Array<number | null>(this.steps.length).fill(null))];
  }

  /** Drop every point and line. */
  clear(): void {
    this.steps = [];
    this.values.clear();
    this.arrival.length = 0;
  }
}
