import { describe, expect, it } from "vitest";
import { latencyCdf } from "./cdf";
import { instanceOccupancy, requestChunks } from "./timeline";
import type { TraceRequest } from "./types";

function req(instance: number, start: number, finish: number, chunks?: TraceRequest["chunks"]): TraceRequest {
  return { group: 0, index: 0, instance, start_s: start, finish_s: finish, output_tokens: 10,
           finish_reason: "stop", policy_version: 0, ...(chunks ? { chunks } : {}) } as TraceRequest;
}

describe("latencyCdf", () => {
  it("sorts latencies and counts every request in the fraction, a broken one too", () => {
    const [x, y] = latencyCdf([req(0, 0, 5), req(0, 1, 3), req(0, 2, NaN), req(1, 0, 10)]);
    expect(x).toEqual([2, 5, 10]);
    expect(y).toEqual([0.25, 0.5, 0.75]);  // the NaN request never finished: the curve stops short of 1
  });
});

describe("instanceOccupancy", () => {
  it("counts running requests per instance, finishes before starts at the same time", () => {
    const { instances, data } = instanceOccupancy([req(1, 0, 4), req(0, 1, 2), req(0, 2, 3)]);
    expect(instances).toEqual([0, 1]);
    expect(data[0]).toEqual([0, 1, 2, 3, 4]);
    expect(data[1]).toEqual([0, 1, 1, 0, 0]);  // back-to-back chunks on instance 0 never count 2
    expect(data[2]).toEqual([1, 1, 1, 1, 0]);
  });
  it("follows a request's chunks across instances (divided rollout)", () => {
    const moved = req(0, 0, 6, [[0, 0, 3, 5], [1, 3, 6, 5]]);
    expect(requestChunks(moved)).toHaveLength(2);
    const { instances, data } = instanceOccupancy([moved]);
    expect(instances).toEqual([0, 1]);
    expect(data).toEqual([[0, 3, 6], [1, 0, 0], [0, 1, 0]]);
  });
});
