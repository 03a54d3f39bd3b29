// The metric catalogue (umbra.telemetry.catalog), embedded by the server in each page as
// <script id="metric-catalog" type="application/json">: chart titles, units, sections,
// order and which way is better come from it, not from metric names written here.
import type { CatalogDocument, MetricInfo, SummaryColumnInfo } from "./types";

export const CATALOG_ELEMENT_ID = "metric-catalog";
/** Section of metrics the catalogue does not know (shown last). */
export const OTHER_SECTION = "Other";

/** A group of metric names under one section title, in display order. */
export interface MetricGroup {
  section: string;
  names: string[];
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

export class MetricCatalog {
  private readonly byName = new Map<string, MetricInfo>();
  private readonly families: [RegExp, MetricInfo][] = [];
  private readonly order = new Map<string, number>();

  constructor(readonly doc: CatalogDocument) {
    doc.metrics.forEach((m, i) => {
      this.order.set(m.name, i);
      if (m.name.includes("{")) {
        // "rollout/instance_idle_frac/{instance}" matches "rollout/instance_idle_frac/3"
        const pattern = escapeRegExp(m.name).replace(escapeRegExp("{instance}"), "\\d+");
        this.families.push([new RegExp(`^${pattern}$`), m]);
      } else {
        this.byName.set(m.name, m);
      }
    });
  }

  /** The catalogue embedded in `doc`; an empty one (every metric unknown) if it is missing or broken. */
  static fromPage(doc: Document = document): MetricCatalog {
    const empty: CatalogDocument = { sections: [], metrics: [], summary: [] };
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

  /** The entry of a logged name (a per-instance name maps to its family). */
  lookup(name: string): MetricInfo | undefined {
    return this.byName.get(name) ?? this.families.find(([re]) => re.test(name))?.[1];
  }

  /** Chart title: "throughput (tok/s)"; the name itself when the catalogue lacks it. */
  title(name: string): string {
    const m = this.lookup(name);
    if (!m) return name;
    return m.unit ? `${m.label} (${m.unit})` : m.label;
  }

  /** Names charted on the run dashboard, in catalogue order. */
  dashboardMetrics(): string[] {
    return this.doc.metrics.filter((m) => m.dashboard && !m.name.includes("{")).map((m) => m.name);
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
