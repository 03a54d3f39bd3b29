import { describe, expect, it } from "vitest";
import { familyPattern, MetricCatalog, OTHER_SECTION, placeholdersOf } from "./catalog";
import type { CatalogDocument, MetricInfo } from "./types";

function metric(name: string, section: string, label: string, unit = "", extra: Partial<MetricInfo> = {}): MetricInfo {
  return { name, section, label, unit, better: "none", description: label, dashboard: true, compare: false, family: null, ...extra };
}

// umbra.telemetry.catalog.PLACEHOLDERS
const PLACEHOLDERS = { instance: "\\d+", key: "[a-z0-9_]+", actor: "[a-z0-9_.-]+", node: "[a-z0-9_.-]+" };

const DOC: CatalogDocument = {
  sections: ["Rollout speed", "Tail and latency", "Training", "System"],
  metrics: [
    metric("rollout/throughput_tok_s", "Rollout speed", "throughput", "tok/s", { better: "higher" }),
    metric("rollout/tail_time_s", "Tail and latency", "tail time", "s"),
    metric("rollout/instance_idle_frac/{instance}", "Tail and latency", "instance idle", "", { dashboard: false }),
    metric("train/loss", "Training", "loss"),
    metric("system/node/{node}/mem_frac", "System", "node memory used"),
    metric("system/actor/{actor}/rss_gib", "System", "actor memory", "GiB"),
    metric("system/driver_rss_gib", "System", "driver memory", "GiB"),
  ],
  placeholders: PLACEHOLDERS,
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

  it("lists the dashboard's metrics in catalogue order, a charted family by its own name", () => {
    expect(catalog.dashboardMetrics()).toEqual(["rollout/throughput_tok_s", "rollout/tail_time_s", "train/loss",
      "system/node/{node}/mem_frac", "system/actor/{actor}/rss_gib", "system/driver_rss_gib"]);
  });

  it("maps an actor's or a node's name to its family and key", () => {
    expect(catalog.member("system/actor/trainer-0/rss_gib")).toEqual({ family: "system/actor/{actor}/rss_gib", key: "trainer-0" });
    expect(catalog.member("system/node/ip-10-0-0-7.ec2.internal/mem_frac")).toEqual(
      { family: "system/node/{node}/mem_frac", key: "ip-10-0-0-7.ec2.internal" });
    expect(catalog.member("rollout/instance_idle_frac/2")).toEqual({ family: "rollout/instance_idle_frac/{instance}", key: "2" });
    expect(catalog.member("system/actor/a/b/rss_gib")).toBeUndefined(); // one path segment per key
    expect(catalog.member("system/driver_rss_gib")).toBeUndefined(); // a metric of its own
    expect(catalog.member("system/actor/{actor}/rss_gib")).toBeUndefined(); // the family's own name
    expect(catalog.lookup("system/actor/{actor}/rss_gib")?.label).toBe("actor memory");
    expect(catalog.title("system/actor/rollout-1/rss_gib")).toBe("actor memory (GiB)");
  });

  it("reads a family's placeholders and makes one captured pattern of them", () => {
    expect(placeholdersOf("system/actor/{actor}/rss_gib")).toEqual(["actor"]);
    expect(placeholdersOf("train/loss")).toEqual([]);
    const re = familyPattern("x/{node}/{actor}/y", PLACEHOLDERS);
    expect(re.exec("x/head/rollout-0/y")?.slice(1)).toEqual(["head", "rollout-0"]);
    expect(familyPattern("x/{other}", {}).test("x/anything.at-all")).toBe(true); // unknown: one segment
    expect(familyPattern("x/{other}", {}).test("x/a/b")).toBe(false);
  });

  it("groups names by section in catalogue order, unknown names last in the order given", () => {
    expect(catalog.groupBySection(["custom/b", "train/loss", "custom/a", "rollout/throughput_tok_s"])).toEqual([
      { section: "Rollout speed", names: ["rollout/throughput_tok_s"] },
      { section: "Training", names: ["train/loss"] },
      { section: OTHER_SECTION, names: ["custom/b", "custom/a"] },
    ]);
  });

  it("puts a family's chart and its members in the family's section", () => {
    expect(catalog.groupBySection(["system/driver_rss_gib", "system/actor/{actor}/rss_gib", "system/node/h/mem_frac"]))
      .toEqual([{ section: "System", names: ["system/node/h/mem_frac", "system/actor/{actor}/rss_gib", "system/driver_rss_gib"] }]);
  });

  it("works without a catalogue (every metric unknown)", () => {
    const empty = new MetricCatalog({ sections: [], metrics: [], placeholders: {}, summary: [] });
    expect(empty.title("train/loss")).toBe("train/loss");
    expect(empty.groupBySection(["train/loss"])).toEqual([{ section: OTHER_SECTION, names: ["train/loss"] }]);
  });
});
