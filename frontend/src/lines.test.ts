import { describe, expect, it } from "vitest";
import { compareKeys, LineSet } from "./lines";

describe("LineSet", () => {
  it("keeps one sorted x array with a line per key, null where a line has no point", () => {
    const lines = new LineSet();
    expect(lines.upsert(2, 20, "rollout-10")).toBe(true);
    expect(lines.upsert(0, 1, "rollout-2")).toBe(true);
    expect(lines.upsert(2, 3, "rollout-2")).toBe(false);
    expect(lines.upsert(1, 11, "rollout-10")).toBe(false);
    expect(lines.size).toBe(3);
    expect(lines.keys()).toEqual(["rollout-2", "rollout-10"]); // natural order
    expect(lines.data()).toEqual([[0, 1, 2], [1, null, 3], [null, 11, 20]]);
    expect(lines.arrivalIndex("rollout-10")).toBe(0); // colours follow arrival
    expect(lines.arrivalIndex("nope")).toBe(-1);
  });

  it("replaces a point at the same step and gives each line's latest value", () => {
    const lines = new LineSet();
    lines.upsert(0, 1);
    lines.upsert(0, 5);
    lines.upsert(3, 0.5, "b");
    expect(lines.data([""])).toEqual([[0, 3], [5, null]]);
    expect(lines.latest("")).toBe(5);
    expect(lines.latest("b")).toBe(0.5);
    expect(lines.latest("c")).toBeUndefined();
    expect(lines.data(["", "c"])[2]).toEqual([null, null]); // a key without a line: empty
  });

  it("clears every point and line", () => {
    const lines = new LineSet();
    lines.upsert(1, 1, "a");
    lines.clear();
    expect(lines.size).toBe(0);
    expect(lines.keys()).toEqual([]);
    expect(lines.upsert(1, 2, "a")).toBe(true);
  });
});

describe("compareKeys", () => {
  it("orders numbers inside keys by value", () => {
    expect(["trainer-10", "rollout-1", "trainer-2"].sort(compareKeys)).toEqual(["rollout-1", "trainer-2", "trainer-10"]);
  });
});
