// The metric catalogue (umbra.telemetry.catalog), embedded by the server in each page as
// <script id="metric-catalog" type="application/json">: chart titles, units, sections,
// order and which way is better come from it, not from metric names written here.
import type { CatalogDocument, MetricInfo, SummaryColumnInfo } from "./types";

export const CATALOG_ELEMENT_ID = "metric-catalog";
/** Section of metrics the catalogue does not know (shown last). */
export const OTHER_SECTION = "Other";
/**
 * A custom reward's extra numbers, `reward/extra/<key>` (umbra.rewards.score; the reward's
 * dict names the keys): one catalogue entry covers them all, but each key gets a chart of its
 * own once logged, as W&B charts each logged key (ours: a prefix rule, not a family chart).
 */
export const REWARD_EXTRA_PREFIX = "reward/extra/{key}".split("{")[0];
const REWARD_EXTRA_KEY = /^[a-z0-9_]+$/; // as umbra.rewards.pool normalises a key

/** A group of metric names under one section title, in display order. */
export interface MetricGroup {
  section: string;
  names: string[];
}

/** A member of a family: the family's catalogue name and the member's key ("trainer-0"). */
export interface FamilyMember {
  family: string;
  key: string;
}

/** Placeholders of a family's name: "system/actor/{actor}/rss_gib" -> ["actor"]. */
export function placeholdersOf(name: string): string[] {
  return [...name.matchAll(/\{([a-z]+)\}/g)].map((m) => m[1]);
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/**
 * The regular expression of a family's name: each placeholder as the catalogue's pattern
 * for it (one path segment when the catalogue lacks it), captured.
 */
export function familyPattern(name: string, placeholders: Record<string, string>): RegExp {
  let pattern = escapeRegExp(name);
  for (const p of placeholdersOf(name)) {
    pattern = pattern.replace(escapeRegExp(`{${p}}`), `(${placeholders[p] ?? "[^/]+"})`);
  }
  return new RegExp(`^${pattern}$`);
}

export class MetricCatalog {
  private readonly byName = new Map<string, MetricInfo>();
  private readonly families: [RegExp, MetricInfo][] = [];
  private readonly order = new Map<string, number>();

  constructor(readonly doc: CatalogDocument) {
    doc.metrics.forEach((m, i) => {
      this.order.set(m.name, i);
      this.byName.set(m.name, m); // a family's own name too: its chart is titled and grouped by it
      // "system/actor/{actor}/rss_gib" matches "system/actor/trainer-0/rss_gib"
      if (placeholdersOf(m.name).length) this.families.push([familyPattern(m.name, doc.placeholders ?? {}), m]);
    });
  }

  /** The catalogue embedded in `doc`; an empty one (every metric unknown) if it is missing or broken. */
  static fromPage(doc: Document = document): MetricCatalog {
    const empty: CatalogDocument = { sections: [], metrics: [], placeholders: {}, summary: [] };
    const text = doc.getElementById(CATALOG_ELEMENT_ID)?.textContent;
    if (!text) return new MetricCatalog(empty);
    try {
      const parsed = JSON.parse(text) as Partial<CatalogDocument>;
      return new MetricCatalog({ ...empty, ...parsed });
    } catch {
      console.warn("metric catalogue: not JSON, ignored");
      return new MetricCatalog(empty);
    }
  }

  /** The entry of a logged name (a family member maps to its family). */
  lookup(name: string): MetricInfo | undefined {
    return this.byName.get(name) ?? this.families.find(([re]) => re.test(name))?.[1];
  }

  /**
   * The family a logged name belongs to and its key in it ("system/actor/trainer-0/rss_gib" ->
   * {family: "system/actor/{actor}/rss_gib", key: "trainer-0"}); undefined for a name of its own
   * or one the catalogue lacks. Keys of a family with several placeholders are joined by "/".
   */
  member(name: string): FamilyMember | undefined {
    if (this.byName.has(name)) return undefined;
    for (const [re, m] of this.families) {
      const match = re.exec(name);
      if (match) return { family: m.name, key: match.slice(1).join("/") };
    }
    return undefined;
  }

  /**
   * Whether `name` is charted on the dashboard once its first point arrives, in a chart of its
   * own in its entry's section: a `reward/extra/<key>` (REWARD_EXTRA_PREFIX).
   */
  chartedOnArrival(name: string): boolean {
    return name.startsWith(REWARD_EXTRA_PREFIX) && REWARD_EXTRA_KEY.test(name.slice(REWARD_EXTRA_PREFIX.length));
  }

  /**
   * Of the charts `shown` (in one section), the one a new chart for `name` goes before: the
   * first that comes after it in catalogue order, names of one entry (reward extras) by name.
   */
  placeBefore(shown: string[], name: string): string | undefined {
    const order = this.groupBySection([...shown, name].sort()).flatMap((g) => g.names);
    return order[order.indexOf(name) + 1];
  }

  /** Chart title: "throughput (tok/s)", "reward extra: format"; the name itself when the catalogue lacks it. */
  title(name: string): string {
    const m = this.lookup(name);
    if (!m) return name;
    const label = this.chartedOnArrival(name) ? `${m.label}: ${name.slice(REWARD_EXTRA_PREFIX.length)}` : m.label;
    return m.unit ? `${label} (${m.unit})` : label;
  }

  /** Names charted on the run dashboard, in catalogue order; a family's name is one chart, a line per member. */
  dashboardMetrics(): string[] {
    return this.doc.metrics.filter((m) => m.dashboard).map((m) => m.name);
  }

  /** Summary columns of a comparison. */
  summaryColumns(): SummaryColumnInfo[] {
    return this.doc.summary;
  }

  /**
   * `names` grouped by catalogue section, sections and names in catalogue order; names the
   * catalogue lacks come last, under OTHER_SECTION, in the order given.
   */
  groupBySection(names: string[]): MetricGroup[] {
    const rank = (name: string) => {
      const m = this.lookup(name);
      return m ? (this.order.get(m.name) ?? Infinity) : Infinity;
    };
    const sorted = names.map((name, i) => ({ name, i })).sort((a, b) => rank(a.name) - rank(b.name) || a.i - b.i);
    const groups = new Map<string, string[]>();
    for (const section of this.doc.sections) groups.set(section, []);
    for (const { name } of sorted) {
      const section = this.lookup(name)?.section ?? OTHER_SECTION;
      if (!groups.has(section)) groups.set(section, []);
      groups.get(section)!.push(name);
    }
    return [...groups].filter(([, list]) => list.length > 0).map(([section, list]) => ({ section, names: list }));
  }
}
