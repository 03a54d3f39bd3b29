"""Metric series of runs for charts and exports, downsampled in the database.

``series_of(run_ids, names, x, max_points)`` answers
``{metric: {run_id: {"x": [...], "y": [...]}}}`` with at most ``max_points`` points per
series (min/max buckets, ``telemetry.downsample``). On PostgreSQL one aggregate query
does it (``min/max(ARRAY[value, step, epoch])`` keeps the extreme point of each bucket
with its step and time, no sort); elsewhere the reference function runs in Python.
"""
from __future__ import annotations

from django.db import OperationalError, connection, transaction
from django.db.models import Min

from telemetry.downsample import Point, min_max_buckets
from telemetry.models import MetricPoint
from telemetry.series_cache import cached_per_run

X_AXES = ("step", "wall", "relative")
MAX_POINTS_LIMIT = 5000

_PG_QUERY = """
WITH bounds AS MATERIALIZED (
  SELECT run_id, name, min(step) AS s0, max(step) AS s1, count(*) AS n
  FROM telemetry_metricpoint WHERE run_id = ANY(%(runs)s) AND name = ANY(%(names)s) GROUP BY run_id, name
)
SELECT p.run_id, p.name,
       min(ARRAY[p.value, p.step, extract(epoch FROM p.wall_time)]) AS lo,
       max(ARRAY[p.value, p.step, extract(epoch FROM p.wall_time)]) AS hi
FROM telemetry_metricpoint p JOIN bounds b ON p.run_id = b.run_id AND p.name = b.name
GROUP BY p.run_id, p.name,
         CASE WHEN b.n <= %(max_points)s THEN p.step
              ELSE (p.step - b.s0)::bigint * %(buckets)s / (b.s1 - b.s0 + 1) END
"""


AGGREGATE_TIMEOUT_S = 20


class QueryTooSlow(RuntimeError):
    """A metric aggregate ran past ``AGGREGATE_TIMEOUT_S`` and was cancelled."""


def pg_session_for_aggregates(cur) -> None:
    """Planner settings for one big aggregate in this transaction: hash aggregation in
    memory instead of external sorts, no JIT (its compile time exceeds the query's), and
    a statement timeout so that an oversized request cannot hold the database."""
    cur.execute("SET LOCAL work_mem = '64MB'")
    cur.execute("SET LOCAL jit = off")
    cur.execute(f"SET LOCAL statement_timeout = '{AGGREGATE_TIMEOUT_S}s'")


def run_aggregate(cur, sql: str, params: dict) -> list[tuple]:
    """Execute ``sql`` and fetch its rows; raises QueryTooSlow when the timeout cancels it."""
    try:
        cur.execute(sql, params)
        return cur.fetchall()
    except OperationalError as exc:
        if "statement timeout" in str(exc):
            raise QueryTooSlow(f"the metric query took more than {AGGREGATE_TIMEOUT_S} s; "
                               "compare fewer runs or metrics") from None
        raise


def _pg_points(run_ids: list[int], names: list[str], max_points: int) -> dict[tuple[int, str], list[Point]]:
    out: dict[tuple[int, str], dict[int, Point]] = {}
    with transaction.atomic(), connection.cursor() as cur:
        pg_session_for_aggregates(cur)
        rows = run_aggregate(cur, _PG_QUERY, {"runs": run_ids, "names": names, "max_points": max_points,
                                              "buckets": max_points // 2})
    for run_id, name, lo, hi in rows:
        kept = out.setdefault((run_id, name), {})
        for value, step, wall in (lo, hi):
            kept[int(step)] = Point(int(step), float(value), float(wall))
    return {key: [kept[s] for s in sorted(kept)] for key, kept in out.items()}


def _python_points(run_ids: list[int], names: list[str], max_points: int) -> dict[tuple[int, str], list[Point]]:
    raw: dict[tuple[int, str], list[Point]] = {}
    rows = MetricPoint.objects.filter(run_id__in=run_ids, name__in=names).order_by("run_id", "name", "step")
    for run_id, name, step, value, wall in rows.values_list("run_id", "name", "step", "value", "wall_time"):
        raw.setdefault((run_id, name), []).append(Point(step, value, wall.timestamp()))
    return {key: min_max_buckets(points, max_points) for key, points in raw.items()}


def metric_names(run_ids: list[int]) -> list[str]:
    """Sorted distinct metric names logged by any of ``run_ids``."""
    return sorted(set(MetricPoint.objects.filter(run_id__in=run_ids).values_list("name", flat=True).distinct()))


def names_per_run(run_ids: list[int], prefix: str) -> dict[int, list[str]]:
    """``{run_id: names}``: the sorted distinct metric names starting with ``prefix`` that each
    of ``run_ids`` logged (a run with none is absent)."""
    out: dict[int, list[str]] = {}
    for run_id, name in (MetricPoint.objects.filter(run_id__in=run_ids, name__startswith=prefix)
                         .values_list("run_id", "name").distinct().order_by("run_id", "name")):
        out.setdefault(run_id, []).append(name)
    return out


def series_of(run_ids: list[int], names: list[str], x: str = "step", max_points: int = 1500,
              cached: bool = True, versions: dict[int, str] | None = None
              ) -> dict[str, dict[int, dict[str, list[float]]]]:
    """Downsampled series of ``names`` for ``run_ids``.

    ``x``: ``step`` (iteration), ``wall`` (Unix seconds) or ``relative`` (seconds since the
    run's first stored point). ``cached``: reuse downsampled series of unchanged runs
    (``telemetry.series_cache``; ``versions`` as from ``run_versions``). Returns ``{name: {run_id: {"x": [...], "y": [...]}}}`` sorted
    by step; a run without points of a metric is absent under it.
    Raises ValueError for an unknown ``x`` or ``max_points`` outside 2..5000.
    """
    if x not in X_AXES:
        raise ValueError(f"x must be one of {', '.join(X_AXES)}")
    if not 2 <= max_points <= MAX_POINTS_LIMIT:
        raise ValueError(f"max_points must be between 2 and {MAX_POINTS_LIMIT}")
    if not run_ids or not names:
        return {}
    return shape_series(series_points(run_ids, names, max_points, cached, versions), run_ids, x)


def series_points(run_ids: list[int], names: list[str], max_points: int = 1500, cached: bool = True,
                  versions: dict[int, str] | None = None) -> dict[tuple[int, str], tuple[list, list, list]]:
    """``{(run_id, name): (steps, values, walls)}``: the downsampled columns behind :func:`series_of`."""
    def fetch(runs, parts):  # columns (steps, values, walls): cheaper to cache than point tuples
        found = (_pg_points if connection.vendor == "postgresql" else _python_points)(runs, parts, max_points)
        return {key: tuple(map(list, zip(*pts))) for key, pts in found.items()}

    if cached:
        return cached_per_run(f"series-{max_points}", list(run_ids), list(names), fetch, versions)
    return fetch(list(run_ids), list(names))


def shape_series(points: dict[tuple[int, str], tuple[list, list, list]], run_ids: list[int], x: str
                 ) -> dict[str, dict[int, dict[str, list[float]]]]:
    """:func:`series_of`'s answer from :func:`series_points`' columns, on the ``x`` axis."""
    origin = {}
    if x == "relative":
        origin = {r: t.timestamp() for r, t in MetricPoint.objects.filter(run_id__in=run_ids).values(
            "run_id").annotate(t=Min("wall_time")).values_list("run_id", "t")}
    out: dict[str, dict[int, dict[str, list[float]]]] = {}
    for (run_id, name), (steps, values, walls) in sorted(points.items()):
        if x == "step":
            xs = steps
        else:
            shift = origin.get(run_id, 0.0)
            xs = [round(w - shift, 3) for w in walls]
        out.setdefault(name, {})[run_id] = {"x": xs, "y": values}
    return out
