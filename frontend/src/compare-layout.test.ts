import { describe, expect, it } from "vitest";
import { concurrencyText, gridClass, keptColumns, listTitles, showsRatio, sourceTag, splitCharted } from "./compare-layout";
import type { CompareResponse, SummaryColumnInfo } from "./types";

function column(key: string, stat: SummaryColumnInfo["stat"], better: SummaryColumnInfo["better"]): SummaryColumnInfo {
  return { key, metric: `m/${key}`, stat, title: key, heading: key, better };
}

const runs = [
  { id: 1, summary: { throughput_tok_s: 200, accept_len: null, accuracy: null, iterations: 10 } },
  { id: 2, summary: { throughput_tok_s: 320, accept_len: null, accuracy: 0.5, iterations: 10 } },
] as unknown as CompareResponse["runs"];

describe("splitCharted", () => {
  it("charts a metric some run has points of and leaves out one no run has", () => {
    const series = {
      "rollout/throughput_tok_s": { "1": { x: [0, 1], y: [1, 2] } },
      "rollout/spec/accept_len": { "1": { x: [], y: [] } },
      "reward/mean": { "2": { x: [0], y: [0.1] }, "9": { x: [0], y: [1] } },
    } as unknown as CompareResponse["series"];
    const names = ["rollout/throughput_tok_s", "rollout/spec/accept_len", "train/loss", "reward/mean"];
    expect(splitCharted(names, series, [1, 2])).toEqual({
      charted: ["rollout/throughput_tok_s", "reward/mean"],
      missing: ["rollout/spec/accept_len", "train/loss"],
    });
    // points of a run that is not selected do not count
    expect(splitCharted(["reward/mean"], series, [1]).missing).toEqual(["reward/mean"]);
  });
});

describe("keptColumns", () => {
  it("leaves out the columns no selected run has a value in", () => {
    const cols = [column("throughput_tok_s", "median", "higher"), column("accept_len", "median", "higher"),
      column("accuracy", "last", "higher"), column("iterations", "count", "none")];
    expect(keptColumns(cols, runs).map((c) => c.key)).toEqual(["throughput_tok_s", "accuracy", "iterations"]);
    expect(keptColumns(cols, [runs[0]]).map((c) => c.key)).toEqual(["throughput_tok_s", "iterations"]);
  });
});

describe("showsRatio", () => {
  it("gives ratios to measures with a better direction, never to counts", () => {
    expect(showsRatio(column("throughput_tok_s", "median", "higher"))).toBe(true);
    expect(showsRatio(column("tail_time_s", "median", "lower"))).toBe(true);
    expect(showsRatio(column("accuracy", "last", "higher"))).toBe(true);
    expect(showsRatio(column("iterations", "count", "none"))).toBe(false);
    expect(showsRatio(column("x", "last", "none"))).toBe(false);
  });
});

describe("sourceTag", () => {
  it("labels validation and training accuracy apart", () => {
    expect(sourceTag("val/accuracy")?.short).toBe("val");
    expect(sourceTag("reward/accuracy")?.short).toBe("train");
    expect(sourceTag(undefined)).toBeNull();
  });
});

describe("gridClass and listTitles", () => {
  it("lets a lone chart span the row and joins titles for a sentence", () => {
    expect(gridClass(1)).toBe("chart-grid lone");
    expect(gridClass(3)).toBe("chart-grid");
    expect(listTitles(["a"])).toBe("a");
    expect(listTitles(["a", "b", "c"])).toBe("a, b and c");
  });
});

describe("concurrencyText", () => {
  it("names compared pairs and runs outside the comparison, counting other teams' runs", () => {
    expect(concurrencyText([], {})).toBe("");
    expect(concurrencyText([[3, 4]], { "4": { runs: [1], hidden: 2 } })).toBe(
      "Ran concurrently: throughput ratios are not comparable (#3 and #4 shared a cluster at the same time; "
      + "#4 shared its cluster with #1, 2 runs of other teams while it ran).");
  });
});
