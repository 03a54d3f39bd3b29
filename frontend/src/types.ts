// Wire formats shared with the Django side (series.json, WebSocket messages,
// the metric catalogue and GET /api/compare/, documented in docs/api.md).
// The WebSocket messages and the catalogue mirror pydantic models and dataclasses in
// workers/umbra/telemetry/ (messages.py, wire.py, catalog.py, summary_columns.py);
// tests/unit/test_wire_contract.py fails when their field names drift apart.

/** One [step, value] pair; step is the iteration number. */
export type Point = [number, number];

/**
 * One chunk of a request's generation: the instance it ran on, its start and
 * finish in seconds since the rollout start, and the tokens it produced.
 */
export type Chunk = [instance: number, start_s: number, finish_s: number, tokens: number];

/** One generation request from a rollout trace (umbra.telemetry.wire.RequestRow). */
export interface TraceRequest {
  group: number;
  index: number;
  instance: number;
  start_s: number;
  finish_s: number;
  /** Absent in older traces. */
  prompt_tokens?: number | null;
  output_tokens: number;
  finish_reason: string;
  policy_version: number;
  /** Every chunk the request ran, in order; absent (or empty) in older traces. */
  chunks?: Chunk[];
}

/** The rollout set-up a trace ran on (umbra.telemetry.wire.TraceMeta). */
export interface TraceMeta {
  policy: string;
  instances: number;
  capacity: number;
  kv_cache_gib: number;
  admission: "cap" | "kv" | "engine";
  max_tokens: number;
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

/** One metric point (umbra.telemetry.wire.PointIn). */
export interface MetricPoint {
  name: string;
  step: number;
  value: number;
}

/** Points of a batch just stored (umbra.telemetry.messages.MetricsMessage). */
export interface MetricsMessage {
  type: "metrics";
  points: MetricPoint[];
}

/** An iteration's request trace, thinned for the browser (TraceMessage). */
export interface TraceMessage {
  type: "trace";
  iteration: number;
  requests: TraceRequest[];
  meta: TraceMeta | null;
}

/** The run moved to `state` (StateMessage). */
export interface StateMessage {
  type: "state";
  state: string;
  reason: string;
}

/** One entry of the run's event log (EventNote); `at` is ISO 8601. */
export interface EventNote {
  kind: string;
  reason: string;
  at: string;
}

/** The job's notes of a batch just stored (EventsMessage). */
export interface EventsMessage {
  type: "events";
  events: EventNote[];
}

/** The tail of the run's Ray job log as last polled (LogMessage). */
export interface LogMessage {
  type: "log";
  tail: string;
}

/** To a team's runs table: a run's new state or latest key numbers (RunRowMessage). */
export interface RunRowMessage {
  type: "run_row";
  run: number;
  state: string | null;
  values: Record<string, number>;
  iterations_done: number | null;
}

/** Messages pushed over the run's WebSocket (and, RunRowMessage, the team's runs table's). */
export type SocketMessage = MetricsMessage | TraceMessage | StateMessage | EventsMessage | LogMessage | RunRowMessage;

/** Which way a metric is better. */
export type Better = "higher" | "lower" | "none";

/** One catalogue entry (umbra.telemetry.catalog.Metric); `{instance}` in a family's name. */
export interface MetricInfo {
  name: string;
  section: string;
  label: string;
  /** Printed after values; "" for counts, fractions and scores. */
  unit: string;
  better: Better;
  description: string;
  /** Charted on the run dashboard. */
  dashboard: boolean;
  /** A default metric of the comparison. */
  compare: boolean;
  /** Name shared by the members of a fixed family (percentiles), else null. */
  family: string | null;
}

/** One summary column of GET /api/compare/ (umbra.telemetry.summary_columns.SummaryColumn). */
export interface SummaryColumnInfo {
  key: string;
  metric: string;
  stat: "median" | "last" | "count";
  title: string;
  /** The title with its statistic, e.g. "throughput tok/s (median)". */
  heading: string;
  better: Better;
}

/** The page's `#metric-catalog` JSON ({% metric_catalog %}). */
export interface CatalogDocument {
  sections: string[];
  metrics: MetricInfo[];
  /** What each placeholder of a family's name stands for: {"actor": "[a-z0-9_.-]+", ...} (regular expressions). */
  placeholders: Record<string, string>;
  summary: SummaryColumnInfo[];
}

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
  /** The `reward/extra/<key>` metrics any compared run logged (the metric picker offers them). */
  reward_extras?: string[];
  reference: number;
  /** run id -> non-policy config keys in which it differs from the reference. */
  reference_mismatch?: Record<string, string[]>;
  /** Pairs of run ids whose rollouts overlapped in time on the same cluster. */
  concurrent?: [number, number][];
  /** Per compared run: runs outside the comparison that shared its cluster while it ran
   *  (ids the viewer may see; the others counted). */
  shared_cluster?: Record<string, { runs: number[]; hidden: number }>;
  runs: CompareRun[];
  /** Only the config keys whose values differ, and each run's values (keyed by run id). */
  config_diff: { keys: string[]; values: Record<string, Record<string, unknown>> };
  /** metric name -> run id -> series. */
  series: Record<string, Record<string, XYSeries>>;
}
