import { describe, expect, it } from "vitest";
import { MetricCatalog, OTHER_SECTION } from "./catalog";
import type { CatalogDocument, MetricInfo } from "./types";

function metric(name: string, section: string, label: string, unit = "", extra: Partial<MetricInfo> = {}): MetricInfo {
  return { name, section, label, unit, better: "none", description: label, dashboard: true, compare: false, family: null, ...extra };
}

const DOC: CatalogDocument = {
  sections: ["Rollout speed", "Tail and latency", "Training"],
  metrics: [
    metric("rollout/throughput_tok_s", "Rollout speed", "throughput", "tok/s", { better: "higher" }),
    metric("rollout/tail_time_s", "Tail and latency", "tail time", "s"),
    metric("rollout/instance_idle_frac/{instance}", "Tail and latency", "instance idle", "", { dashboard: false }),
    metric("train/loss", "Training", "loss"),
  ],
  summary: [],
};

describe("MetricCatalog", () => {
  const catalog = new MetricCatalog(DOC);

  it("titles a metric by its label and unit, an unknown one by its name", () => {
    expect(catalog.title("rollout/throughput_tok_s")).toBe("throughput (tok/s)");
    expect(catalog.title("train/loss")).toBe("loss");
    expect(catalog.title("custom/thing")).toBe("custom/thing");
  });

  it("maps a per-instance name to its family entry", () => {
    expect(catalog.lookup("rollout/instance_idle_frac/3")?.label).toBe("instance idle");
    expect(catalog.lookup("rollout/instance_idle_frac/x")).toBeUndefined();
  });

  it("lists the dashboard's metrics in catalogue order, without families", () => {
    expect(catalog.dashboardMetrics()).toEqual(["rollout/throughput_tok_s", "rollout/tail_time_s", "train/loss"]);
  });

  it("groups names by section in catalogue order, unknown names last in the order given", () => {
    expect(catalog.groupBySection(["custom/b", "train/loss", "custom/a", "rollout/throughput_tok_s"])).toEqual([
      { section: "Rollout speed", names: ["rollout/throughput_tok_s"] },
      { section: "Training", names: ["train/loss"] },
      { section: OTHER_SECTION, names: ["custom/b", "custom/a"] },
    ]);
  });

  it("works without a catalogue (every metric unknown)", () => {
    const empty = new MetricCatalog({ sections: [], metrics: [], summary: [] });
    expect(empty.title("train/loss")).toBe("train/loss");
    expect(empty.groupBySection(["train/loss"])).toEqual([{ section: OTHER_SECTION, names: ["train/loss"] }]);
  });
});
