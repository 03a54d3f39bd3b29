"""Ingest a metric batch exactly once and push it to dashboards."""
from __future__ import annotations

import logging

from django.db import IntegrityError, connection, transaction
from django.db.models import F

from runs.models import Run, RunEvent
from telemetry.broadcast import broadcast, broadcast_to_team
from telemetry.models import IterationTrace, MetricBatch, MetricPoint
from telemetry import name_limit
from telemetry.run_table import KEY_NUMBERS
from umbra.telemetry import catalog
from umbra.telemetry.messages import EventNote, EventsMessage, MetricsMessage, RunRowMessage, TraceMessage
from umbra.telemetry.wire import BatchIn

log = logging.getLogger(__name__)


def ingest(run: Run, batch: BatchIn) -> bool:
    """Store ``batch`` for ``run`` unless its ``seq`` was stored before.

    Returns True if stored now, False for a duplicate (a retried delivery). A point at a
    (name, step) stored before replaces it: a resumed run re-runs the iterations after its
    checkpoint, and the history keeps one value per step, the latest attempt's.
    """
    if MetricBatch.objects.filter(run=run, seq=batch.seq).exists():
        return False
    # One value per (name, step), the last given: an upsert may not touch a row twice.
    points = list({(p.name, p.step): p for p in batch.points}.values())
    try:
        with transaction.atomic():
            MetricBatch.objects.create(run=run, seq=batch.seq)
            # Writing points through here is what keeps cached series (series_cache) fresh.
            Run.objects.filter(pk=run.pk).update(metrics_version=F("metrics_version") + 1)
            points, dropped = name_limit.within_name_limit(run.pk, points)
            _upsert_points(run.pk, points)
            notes = [*batch.events, *_name_limit_note(run, dropped)]
            events = _store_notes(run, notes) if notes else []
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
    broadcast(run.pk, MetricsMessage(points=points))
    row = run_row_update(run.pk, points)
    if row is not None:
        broadcast_to_team(run.experiment.team_id, row)
    if events:  # one push for the batch's notes, not one per note
        broadcast(run.pk, EventsMessage(events=[EventNote(kind=e.kind, reason=e.reason, at=e.at.isoformat())
                                                for e in events]))
    if batch.trace is not None:
        broadcast(run.pk, TraceMessage.model_validate(trace_for_browser(batch.trace.model_dump())))
    return True


def run_row_update(run_id: int, points) -> RunRowMessage | None:
    """What a batch changes in the team's runs table: the latest value (highest step) of each
    key number it holds, and the iterations done when it ends one (None if it has neither)."""
    keys = {metric for _, metric in KEY_NUMBERS}
    latest: dict[str, tuple[int, float]] = {}
    for p in points:
        if (p.name in keys or p.name == catalog.ITERATION_METRIC) and p.step >= latest.get(p.name, (-1, 0.0))[0]:
            latest[p.name] = (p.step, p.value)
    done = latest.pop(catalog.ITERATION_METRIC, None)
    if not latest and done is None:
        return None
    return RunRowMessage(run=run_id, values={name: v for name, (_, v) in latest.items()},
                         iterations_done=None if done is None else done[0] + 1)


MAX_JOB_NOTES = 1000  # per run: a job that loops on a fault must not bloat the run's event log


def _store_notes(run: Run, notes: list[str]) -> list[RunEvent]:
    """Store the job's notes as ``job`` events of ``run``, up to MAX_JOB_NOTES per run
    (later ones are dropped with a warning: they are informational, the metrics are not)."""
    room = MAX_JOB_NOTES - RunEvent.objects.filter(run=run, kind=RunEvent.Kind.JOB).count()
    if len(notes) > room:
        log.warning("run %s: dropping %d job notes over the limit of %d", run.pk, len(notes) - max(room, 0),
                    MAX_JOB_NOTES)
    return RunEvent.objects.bulk_create(
        [RunEvent(run=run, kind=RunEvent.Kind.JOB, from_state=run.state, to_state=run.state, reason=e)
         for e in notes[:max(room, 0)]])


NAME_LIMIT_NOTE = "metric names past the run's limit"


def _name_limit_note(run: Run, dropped: list[str]) -> list[str]:
    """The note for the first batch whose points of new names were dropped (``telemetry.name_limit``)."""
    if not dropped or RunEvent.objects.filter(run=run, kind=RunEvent.Kind.JOB,
                                              reason__startswith=NAME_LIMIT_NOTE).exists():
        return []
    log.warning("run %s: dropping points of %d metric names past the limit of %d", run.pk, len(dropped),
                name_limit.MAX_METRIC_NAMES)
    return [f"{NAME_LIMIT_NOTE} of {name_limit.MAX_METRIC_NAMES:,} distinct names are not stored (this batch: "
            f"{len(dropped):,}, such as {', '.join(dropped[:3])}; later new names are dropped too)"[:1000]]


def _upsert_points(run_id: int, points) -> None:
    """Insert or replace ``points`` of run ``run_id`` in one statement: arrays unnested by
    PostgreSQL instead of one ORM object per point (ingestion runs at 10k points/s)."""
    if not points:
        return
    table = MetricPoint._meta.db_table
    with connection.cursor() as cur:
        cur.execute(
            f"INSERT INTO {table} (run_id, name, step, value, wall_time) "
            "SELECT %s, n, s, v, now() FROM unnest(%s::varchar[], %s::integer[], %s::float8[]) AS t(n, s, v) "
            "ON CONFLICT (run_id, name, step) DO UPDATE SET value = EXCLUDED.value, wall_time = EXCLUDED.wall_time",
            [run_id, [p.name for p in points], [p.step for p in points], [p.value for p in points]])


MAX_PUSHED_ROWS = 2000  # keeps a trace message far below daphne's 1 MiB WebSocket frame limit


def trace_for_browser(trace: dict) -> dict:
    """The trace as sent to a dashboard (pushed live or fetched): every k-th request when it
    is large, at most 50 chunks each (the stored trace is whole)."""
    rows = trace["requests"]
    if len(rows) > MAX_PUSHED_ROWS:
        step = -(-len(rows) // MAX_PUSHED_ROWS)
        rows = [{**r, "chunks": r["chunks"][:50]} for r in rows[::step]]
    return {**trace, "requests": rows}
