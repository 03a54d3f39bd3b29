// Wire formats shared with the Django side (series.json, WebSocket messages and
// GET /api/compare/, documented in docs/api.md).

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
  | { type: "state"; state: string; reason?: string }
  | { type: "events"; events: { kind: string; reason: string; at: string }[] };

/** x axis of compared series: iteration, Unix seconds, or seconds since the run's first point. */
export type CompareX = "step" | "wall" | "relative";

/** Summary values of one compared run (null where the metric is missing). */
export type CompareSummary = Record<string, number | null>;

/** One run in GET /api/compare/. */
export interface CompareRun {
  id: number;
  label: string;
  team: string;
  experiment: string;
  policy: string;
  state: string;
  url: string;
  summary: CompareSummary;
  /** summary / the reference run's summary, per column. */
  ratios: CompareSummary;
}

/** One run's downsampled series of one metric. */
export interface XYSeries {
  x: number[];
  y: (number | null)[];
}

/** Body of GET /api/compare/. */
export interface CompareResponse {
  x: CompareX;
  metrics: string[];
  reference: number;
  /** run id -> non-policy config keys in which it differs from the reference. */
  reference_mismatch?: Record<string, string[]>;
  runs: CompareRun[];
  /** Only the config keys whose values differ, and each run's values (keyed by run id). */
  config_diff: { keys: string[]; values: Record<string, Record<string, unknown>> };
  /** metric name -> run id -> series. */
  series: Record<string, Record<string, XYSeries>>;
}
