"""Per-run statistics of the summary metrics (median, last value, count), computed in
the database on PostgreSQL and in Python elsewhere."""
from __future__ import annotations

import statistics

from django.db import connection, transaction

from telemetry.models import MetricPoint
from telemetry.series import pg_session_for_aggregates, run_aggregate
from telemetry.series_cache import cached_per_run

_PG_QUERY = """
SELECT run_id, name, percentile_cont(0.5) WITHIN GROUP (ORDER BY value),
       (array_agg(value ORDER BY step DESC))[1], count(*)
FROM telemetry_metricpoint WHERE run_id = ANY(%(runs)s) AND name = ANY(%(names)s)
GROUP BY run_id, name
"""


def run_stats(run_ids: list[int], names: list[str], cached: bool = True,
              versions: dict[int, str] | None = None) -> dict[int, dict[str, dict[str, float]]]:
    """``{run_id: {metric: {"median", "last", "count"}}}`` over every stored point of
    ``names`` (``last`` = the value at the highest step). Runs without points are absent.
    ``cached``: reuse the statistics of runs without new points (``telemetry.series_cache``)."""
    out: dict[int, dict[str, dict[str, float]]] = {}
    if not run_ids or not names:
        return out
    pairs = cached_per_run("stats", list(run_ids), list(names), compute, versions) if cached \
        else compute(run_ids, names)
    for (run_id, name), stats in pairs.items():
        out.setdefault(run_id, {})[name] = stats
    return out


def compute(run_ids: list[int], names: list[str]) -> dict[tuple[int, str], dict[str, float]]:
    if connection.vendor == "postgresql":
        with transaction.atomic(), connection.cursor() as cur:
            pg_session_for_aggregates(cur)
            rows = run_aggregate(cur, _PG_QUERY, {"runs": list(run_ids), "names": list(names)})
    else:
        values: dict[tuple[int, str], list[float]] = {}
        for run_id, name, value in MetricPoint.objects.filter(run_id__in=run_ids, name__in=names).order_by(
                "run_id", "name", "step").values_list("run_id", "name", "value"):
            values.setdefault((run_id, name), []).append(value)
        rows = [(r, n, statistics.median(v), v[-1], len(v)) for (r, n), v in values.items()]
    return {(run_id, name): {"median": float(median), "last": float(last), "count": int(count)}
            for run_id, name, median, last, count in rows}
