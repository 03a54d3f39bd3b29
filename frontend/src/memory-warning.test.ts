import { describe, expect, it } from "vitest";
import { memoryWarning } from "./memory-warning";

describe("memoryWarning", () => {
  it("names each node at or above the limit, fullest first", () => {
    const latest = new Map([["head", 0.5], ["worker-1", 0.91], ["worker-2", 0.97]]);
    expect(memoryWarning(latest, 0.9)).toBe("Near the memory limit: node worker-2 97%, node worker-1 91% of their memory in use");
    expect(memoryWarning(new Map([["head", 0.9]]), 0.9)).toBe("Near the memory limit: node head 90% of its memory in use");
  });

  it("is empty while every node is below the limit or none reported", () => {
    expect(memoryWarning(new Map([["head", 0.89]]), 0.9)).toBe("");
    expect(memoryWarning(new Map(), 0.9)).toBe("");
  });
});
