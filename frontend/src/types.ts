// Wire formats shared with the Django side (series.json and WebSocket messages).

/** One [step, value] pair; step is the iteration number. */
export type Point = [number, number];

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
