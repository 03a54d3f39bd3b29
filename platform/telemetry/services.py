"""Ingest a metric batch exactly once and push it to dashboards."""
from __future__ import annotations

from django.db import IntegrityError, transaction

from runs.models import Run
from telemetry.broadcast import broadcast
from telemetry.models import IterationTrace, MetricBatch, MetricPoint
from telemetry.schema import BatchIn


def ingest(run: Run, batch: BatchIn) -> bool:
    """Store ``batch`` for ``run`` unless its ``seq`` was stored before.

    Returns True if stored now, False for a duplicate (a retried delivery).
    """
    try:
        with transaction.atomic():
            MetricBatch.objects.create(run=run, seq=batch.seq)
            MetricPoint.objects.bulk_create(
                [MetricPoint(run=run, name=p.name, step=p.step, value=p.value) for p in batch.points],
                ignore_conflicts=True)
            if batch.trace is not None:
                IterationTrace.objects.update_or_create(
                    run=run, iteration=batch.trace.iteration,
                    defaults={"requests": [r.model_dump() for r in batch.trace.requests]})
    except IntegrityError:
        return False
    broadcast(run.pk, {"type": "metrics", "points": [p.model_dump() for p in batch.points]})
    if batch.trace is not None:
        broadcast(run.pk, {"type": "trace", **batch.trace.model_dump()})
    return True
