"""Celery tasks of the compare app."""
from __future__ import annotations

from celery import shared_task

from compare.services import store_derived

DEFAULT_MAX_POINTS = 1500


# The name it had in telemetry.tasks: queued messages in Redis carry it.
@shared_task(name="telemetry.tasks.warm_run_caches")
def warm_run_caches(run_id: int) -> int:
    """Compute and store a finished run's downsampled series (every metric, the charts'
    default ``max_points``) and its summary statistics (``compare.stored``), so that
    comparing finished runs never waits for the database aggregates. Returns the number of series."""
    return store_derived(run_id, DEFAULT_MAX_POINTS)
