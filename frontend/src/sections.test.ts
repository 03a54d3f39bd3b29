import { describe, expect, it } from "vitest";
import { COLLAPSED_KEY, loadCollapsed, setCollapsed, type KeyValueStore } from "./sections";

function store(initial: Record<string, string> = {}): KeyValueStore & { data: Map<string, string> } {
  const data = new Map(Object.entries(initial));
  return { data, getItem: (k) => data.get(k) ?? null, setItem: (k, v) => void data.set(k, v) };
}

describe("collapsed sections", () => {
  it("round-trips through the store", () => {
    const s = store();
    setCollapsed(s, "Training", true);
    setCollapsed(s, "System", true);
    setCollapsed(s, "Training", false);
    expect([...loadCollapsed(s)]).toEqual(["System"]);
    expect(s.data.get(COLLAPSED_KEY)).toBe('["System"]');
  });
  it("reads garbage as nothing folded", () => {
    expect(loadCollapsed(store({ [COLLAPSED_KEY]: "{not json" })).size).toBe(0);
    expect(loadCollapsed(store({ [COLLAPSED_KEY]: '{"a":1}' })).size).toBe(0);
    expect([...loadCollapsed(store({ [COLLAPSED_KEY]: '["A", 3]' }))]).toEqual(["A"]);
    expect(loadCollapsed(null).size).toBe(0);
  });
  it("survives a store that refuses writes", () => {
    const refusing: KeyValueStore = { getItem: () => null, setItem: () => { throw new Error("quota"); } };
    expect([...setCollapsed(refusing, "A", true)]).toEqual(["A"]);
  });
});
