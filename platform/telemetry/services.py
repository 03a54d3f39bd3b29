"""Ingest a metric batch exactly once and push it to dashboards."""
from __future__ import annotations

from django.db import IntegrityError, transaction
from django.db.models import F

from runs.models import Run
from telemetry.broadcast import broadcast
from telemetry.models import IterationTrace, MetricBatch, MetricPoint
from telemetry.schema import BatchIn


def ingest(run: Run, batch: BatchIn) -> bool:
    """Store ``batch`` for ``run`` unless its ``seq`` was stored before.

    Returns True if stored now, False for a duplicate (a retried delivery).
    """
    if MetricBatch.objects.filter(run=run, seq=batch.seq).exists():
        return False
    try:
        with transaction.atomic():
            MetricBatch.objects.create(run=run, seq=batch.seq)
            # Writing points through here is what keeps cached series (series_cache) fresh.
            Run.objects.filter(pk=run.pk).update(metrics_version=F("metrics_version") + 1)
            MetricPoint.objects.bulk_create(
                [MetricPoint(run=run, name=p.name, step=p.step, value=p.value) for p in batch.points],
                ignore_conflicts=True)
            if batch.trace is not None:
                IterationTrace.objects.update_or_create(
                    run=run, iteration=batch.trace.iteration,
                    defaults={"requests": [r.model_dump() for r in batch.trace.requests],
                              "meta": batch.trace.meta.model_dump() if batch.trace.meta else None})
    except IntegrityError:
        # Only a concurrent delivery of the same seq is a duplicate; anything else is a bug
        # that must surface, not be acknowledged as stored.
        if MetricBatch.objects.filter(run=run, seq=batch.seq).exists():
            return False
        raise
    broadcast(run.pk, {"type": "metrics", "points": [p.model_dump() for p in batch.points]})
    if batch.trace is not None:
        broadcast(run.pk, {"type": "trace", **trace_for_browser(batch.trace.model_dump())})
    return True


MAX_PUSHED_ROWS = 2000  # keeps a trace message far below daphne's 1 MiB WebSocket frame limit


def trace_for_browser(trace: dict) -> dict:
    """The trace as sent to a dashboard (pushed live or fetched): every k-th request when it
    is large, at most 50 chunks each (the stored trace is whole)."""
    rows = trace["requests"]
    if len(rows) > MAX_PUSHED_ROWS:
        step = -(-len(rows) // MAX_PUSHED_ROWS)
        rows = [{**r, "chunks": r["chunks"][:50]} for r in rows[::step]]
    return {**trace, "requests": rows}
