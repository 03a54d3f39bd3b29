// Wire formats shared with the Django side (series.json and WebSocket messages).

/** One [step, value] pair; step is the iteration number. */
export type Point = [number, number];

/**
 * One chunk of a request's generation: the instance it ran on, its start and
 * finish in seconds since the rollout start, and the tokens it produced.
 */
export type Chunk = [instance: number, start_s: number, finish_s: number, tokens: number];

/** One generation request from a rollout trace. */
export interface TraceRequest {
  group: number;
  index: number;
  instance: number;
  start_s: number;
  finish_s: number;
  output_tokens: number;
  finish_reason: string;
  policy_version: number;
  /** Every chunk the request ran, in order; absent (or empty) in older traces. */
  chunks?: Chunk[];
}

/** The last iteration's request trace. */
export interface Trace {
  iteration: number;
  requests: TraceRequest[];
}

/** Body of GET data-series-url. */
export interface SeriesResponse {
  state: string;
  series: Record<string, Point[]>;
  trace: Trace | null;
}

/** Messages pushed over the run's WebSocket. */
export type SocketMessage =
  | { type: "metrics"; points: { name: string; step: number; value: number }[] }
  | ({ type: "trace" } & Trace)
  | { type: "state"; state: string; reason?: string };
