// A custom reward's extra numbers (reward/extra/<key>): a chart per key in "Reward and
// validation" once logged, titled by its key, placed after the fixed reward charts in catalogue
// order, keys by name; and offered by the compare page's metric picker when a run logged them.
import { describe, expect, it } from "vitest";
import { MetricCatalog } from "./catalog";
import { pickerGroups } from "./metric-picker";
import type { CatalogDocument, MetricInfo } from "./types";

const REWARD = "Reward and validation";

function metric(name: string, section: string, label: string, extra: Partial<MetricInfo> = {}): MetricInfo {
  return { name, section, label, unit: "", better: "none", description: label, dashboard: true, compare: false, family: null, ...extra };
}

// as umbra.telemetry.catalog.document() has them
const DOC: CatalogDocument = {
  sections: ["Rollout speed", REWARD, "Training"],
  metrics: [
    metric("rollout/throughput_tok_s", "Rollout speed", "throughput"),
    metric("reward/mean", REWARD, "reward"),
    metric("reward/errors", REWARD, "reward errors"),
    metric("reward/extra/{key}", REWARD, "reward extra", { dashboard: false }),
    metric("val/accuracy", REWARD, "val accuracy"),
    metric("train/loss", "Training", "loss"),
  ],
  placeholders: { instance: "\\d+", key: "[a-z0-9_]+" },
  summary: [],
};

describe("reward/extra/<key>", () => {
  const catalog = new MetricCatalog(DOC);

  it("is charted once logged, each key in a chart of its own titled by the key", () => {
    expect(catalog.chartedOnArrival("reward/extra/format")).toBe(true);
    expect(catalog.chartedOnArrival("reward/extra/length_ok_2")).toBe(true);
    expect(catalog.chartedOnArrival("reward/extra/")).toBe(false);
    expect(catalog.chartedOnArrival("reward/extra/a/b")).toBe(false);
    expect(catalog.chartedOnArrival("reward/mean")).toBe(false);
    expect(catalog.chartedOnArrival("rollout/instance_idle_frac/3")).toBe(false);
    expect(catalog.title("reward/extra/format")).toBe("reward extra: format");
    expect(catalog.title("reward/extra/correct")).toBe("reward extra: correct");
    expect(catalog.title("reward/mean")).toBe("reward");
  });

  it("belongs to the Reward and validation section, after the fixed reward charts", () => {
    expect(catalog.lookup("reward/extra/format")?.section).toBe(REWARD);
    expect(catalog.groupBySection(["val/accuracy", "reward/extra/format", "reward/mean"])).toEqual([
      { section: REWARD, names: ["reward/mean", "reward/extra/format", "val/accuracy"] },
    ]);
  });

  it("goes before the first chart after it: fixed ones in catalogue order, keys by name", () => {
    const shown = ["reward/mean", "reward/errors", "val/accuracy"]; // the section as the dashboard built it
    expect(catalog.placeBefore(shown, "reward/extra/format")).toBe("val/accuracy");
    const withKeys = ["reward/mean", "reward/errors", "reward/extra/correct", "reward/extra/length", "val/accuracy"];
    expect(catalog.placeBefore(withKeys, "reward/extra/format")).toBe("reward/extra/length");
    expect(catalog.placeBefore(withKeys, "reward/extra/a")).toBe("reward/extra/correct");
    expect(catalog.placeBefore(["reward/mean"], "reward/extra/format")).toBeUndefined(); // last: appended
  });

  it("is offered by the compare page's picker when a compared run logged it, keys by name", () => {
    const groups = pickerGroups(catalog, ["reward/mean", "reward/extra/format"], ["reward/extra/format", "reward/extra/correct"]);
    const reward = groups.find((g) => g.section === REWARD)!;
    expect(reward.options).toEqual([
      { name: "reward/mean", title: "reward", checked: true },
      { name: "reward/errors", title: "reward errors", checked: false },
      { name: "reward/extra/correct", title: "reward extra: correct", checked: false },
      { name: "reward/extra/format", title: "reward extra: format", checked: true },
      { name: "val/accuracy", title: "val accuracy", checked: false },
    ]);
    expect(pickerGroups(catalog, []).flatMap((g) => g.options.map((o) => o.name))).not.toContain("reward/extra/{key}");
  });
});
