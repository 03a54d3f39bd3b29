import { describe, expect, it } from "vitest";
import { MetricCatalog } from "./catalog";
import { pickerGroups, toggleMetric } from "./metric-picker";
import type { MetricInfo } from "./types";

function metric(name: string, section: string, label: string): MetricInfo {
  return { name, section, label, unit: "", better: "none", description: "", dashboard: true, compare: false,
    family: null } as unknown as MetricInfo;
}

const catalog = new MetricCatalog({
  sections: ["Rollout", "Reward"],
  metrics: [metric("rollout/throughput_tok_s", "Rollout", "throughput"), metric("reward/mean", "Reward", "reward"),
    metric("rollout/instance_idle_frac/{instance}", "Rollout", "idle")],
  placeholders: { instance: "\\d+" },
  summary: [],
});

describe("pickerGroups", () => {
  it("lists the catalogue's fixed names by section, ticks the shown ones, adds unknown shown names", () => {
    const groups = pickerGroups(catalog, ["reward/mean", "custom/x"]);
    expect(groups.map((g) => g.section)).toEqual(["Rollout", "Reward", "Other"]);
    expect(groups[0].options).toEqual([{ name: "rollout/throughput_tok_s", title: "throughput", checked: false }]);
    expect(groups[1].options[0].checked).toBe(true);
    expect(groups[2].options.map((o) => o.name)).toEqual(["custom/x"]);
  });
});

describe("toggleMetric", () => {
  it("adds at the end, removes, ignores a duplicate and gives null for none", () => {
    expect(toggleMetric(["a"], "b", true)).toEqual(["a", "b"]);
    expect(toggleMetric(["a", "b"], "a", false)).toEqual(["b"]);
    expect(toggleMetric(["a"], "a", true)).toEqual(["a"]);
    expect(toggleMetric(["a"], "a", false)).toBeNull();
  });
});
