"""Celery tasks of the compare app."""
from __future__ import annotations

from celery import shared_task

from compare.stats import run_stats
from compare.summary import COLUMNS
from telemetry.series import metric_names, series_of

DEFAULT_MAX_POINTS = 1500


# The name it had in telemetry.tasks: queued messages in Redis carry it.
@shared_task(name="telemetry.tasks.warm_run_caches")
def warm_run_caches(run_id: int) -> int:
    """Compute and cache a finished run's downsampled series (every metric, the charts'
    default ``max_points``) and its summary statistics, so that comparing finished runs
    never waits for the database aggregates. Returns the number of series cached."""
    names = metric_names([run_id])
    series_of([run_id], names, max_points=DEFAULT_MAX_POINTS)
    run_stats([run_id], sorted({m for m, _ in COLUMNS.values()}))
    return len(names)
