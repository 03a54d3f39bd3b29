"""The Celery-to-Ray dispatch, in one file: submit a run as a Ray job, follow it, cancel
it, and find the runs a killed worker dropped.

Plain functions, called by the thin Celery tasks in ``runs.tasks``; each returns what the
task schedules next (:class:`Done`, :class:`Again`, :class:`Retry`, :class:`StartFollowing`),
so this module never imports the tasks. The Ray Jobs API itself is ``runs.ray_jobs``.

Which queued run is dispatched when is ``runs.queue``'s decision; :func:`dispatch` submits
the run it is given. A killed worker's tasks stay unacknowledged in Redis until the
broker's visibility timeout (an hour), so every worker that starts takes up the
unfinished runs again (:func:`runs_to_recover`). Dispatch is idempotent (the job id is derived from the run id
and attempt) and a follow chain holds a lease per run, so the duplicates this makes
collapse to one Ray job and one chain of polls.
"""
from __future__ import annotations

import logging
import re
import time
import uuid
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.db.models import Max

from runs import leases, ray_jobs
from runs.ingest_tokens import issue_ingest_token
from runs.lifecycle import transition
from runs.models import Run, submission_id
from runs.signals import log_updated

log = logging.getLogger(__name__)

_RAY_TO_RUN = {"PENDING": Run.State.DISPATCHING, "RUNNING": Run.State.RUNNING,
               "SUCCEEDED": Run.State.SUCCEEDED, "FAILED": Run.State.FAILED, "STOPPED": Run.State.CANCELLED}
_RAY_ENDED = ("SUCCEEDED", "FAILED", "STOPPED")
# Seconds one dispatcher may take to check, issue the token and submit; a killed one's lease lapses after it.
DISPATCH_LEASE_S = 60
# Seconds between two looks of a dispatch that found another dispatcher's lease.
DISPATCH_WAIT_S = 5
# Seconds from a submitted job to its first poll.
FIRST_POLL_S = 1


@dataclass(frozen=True)
class Done:
    """Nothing more to schedule for this run."""


@dataclass(frozen=True)
class Again:
    """Run the same step again in ``after_s`` seconds (a follow step: as chain ``chain``)."""

    after_s: float
    chain: str | None = None


@dataclass(frozen=True)
class Retry:
    """The cluster did not answer: the task retries with back-off (a counted retry)."""

    error: Exception


@dataclass(frozen=True)
class StartFollowing:
    """The job is submitted: start a follow chain in ``after_s`` seconds."""

    after_s: float = FIRST_POLL_S


DONE = Done()


def follow_lease_s() -> float:
    """Seconds a follow chain's lease lasts: a few polls, so a live chain renews it in
    time, while a killed worker's chain loses it soon."""
    return 3 * settings.UMBRA_FOLLOW_INTERVAL_S + 10


def _follow_key(run_id: int) -> str:
    return f"runs:follow:{run_id}"


def _follow_error_key(run_id: int) -> str:
    """Since when the cluster has not answered about the run's job (cleared by an answer)."""
    return f"runs:follow-error-since:{run_id}"


def dispatch(run_id: int, final_try: bool = False, attempt: int | None = None) -> Done | Again | Retry | StartFollowing:
    """Submit run ``run_id`` as a Ray job (idempotent: the job id is derived from the run id
    and attempt, and an existing job is never submitted again).

    One dispatcher per job at a time (a lease): two would each issue an ingestion token, and
    the job would carry one the platform no longer accepts. A cluster that does not answer
    gives :class:`Retry`, or on the ``final_try`` fails the run. ``attempt`` (what the
    queue chose): nothing is done unless the run is still at that attempt and not queued.
    """
    run = Run.objects.select_related("experiment").filter(pk=run_id).first()
    if run is None or run.is_terminal:  # deleted or cancelled while queued
        return DONE
    if attempt is not None and (run.attempt != attempt or run.state == Run.State.QUEUED):
        # A message for an earlier attempt (a retry still pending when the run was
        # cancelled and resumed): the new attempt waits its turn in the queue.
        return DONE
    transition(run_id, Run.State.DISPATCHING, "submitting to Ray")
    key, owner = f"runs:dispatch:{run.submission_id}", uuid.uuid4().hex
    try:
        client = ray_jobs.client_for(run.config)
        if not leases.hold(key, owner, DISPATCH_LEASE_S):
            # Another worker is submitting it, or was killed doing so: look again later.
            return Again(DISPATCH_WAIT_S)
        try:
            if run.attempt:
                _stop_earlier_attempts(client, run)
            if not ray_jobs.job_exists(client, run.submission_id):
                token = issue_ingest_token(run)
                ray_jobs.submit(client, run.submission_id, run.pk, run.config, token, _last_batch_seq(run))
        finally:
            leases.release(key, owner)
    except ray_jobs.ClusterUnavailable as exc:
        if final_try:
            transition(run_id, Run.State.FAILED, str(exc))
            return DONE
        return Retry(exc)
    except Exception as exc:  # noqa: BLE001 - anything else: the run must not stay dispatching forever
        log.exception("run %s: dispatch failed", run_id)
        transition(run_id, Run.State.FAILED, f"dispatch failed: {type(exc).__name__}: "
                                             f"{ray_jobs.redact(str(exc))[:500]}")
        return DONE
    with transaction.atomic():  # cancelled or resumed again while we submitted: that job must not run
        now = Run.objects.select_for_update().get(pk=run_id)
        stale = now.is_terminal or now.attempt != run.attempt
        if not stale:
            Run.objects.filter(pk=run_id).update(ray_job_id=run.submission_id)
    if stale:
        log.info("run %s changed while %s was submitted; stopping that job", run_id, run.submission_id)
        client.stop_job(run.submission_id)
        return DONE
    return StartFollowing()


def _last_batch_seq(run: Run) -> int:
    """The highest metric-batch number stored for ``run`` (0 for none): a resumed attempt
    numbers its batches after it. Read through the reverse relation of telemetry's
    MetricBatch (``metric_batches``), so runs does not import telemetry."""
    return run.metric_batches.aggregate(m=Max("seq"))["m"] or 0


def _stop_earlier_attempts(client, run: Run) -> None:
    """Stop any job of an earlier attempt of ``run`` that still runs (e.g. one the platform
    lost contact with and marked failed): two attempts must not share its checkpoints."""
    for attempt in range(run.attempt):
        job = submission_id(run.pk, attempt)
        try:
            if client.stop_job(job):
                log.warning("stopped %s, an earlier attempt of run %s that was still running", job, run.pk)
        except Exception:  # noqa: BLE001 - no such job (never submitted): nothing to stop
            pass


def follow(run_id: int, chain: str | None = None) -> Done | Again:
    """Poll the run's Ray job once: record state changes and the log tail; :class:`Again`
    (same ``chain``) unless the run has ended.

    A chain holds the lease ``runs:follow:<run_id>`` and ends when another chain holds it,
    so duplicate chains collapse to one. A new chain (``chain`` None) that finds the lease
    held looks once more when the lease has had time to lapse: its holder may have died
    with its worker. A cluster that does not answer fails the run only after
    ``settings.UMBRA_FOLLOW_GRACE_S`` seconds of silence.
    """
    run = Run.objects.filter(pk=run_id).first()
    if run is None or run.is_terminal:
        return DONE
    new, chain = chain is None, chain or uuid.uuid4().hex
    if not leases.hold(_follow_key(run_id), chain, follow_lease_s()):
        return Again(follow_lease_s(), chain) if new else DONE
    try:
        client = ray_jobs.client_for(run.config)
        info = client.get_job_info(run.submission_id)
    except Exception as exc:  # cluster unreachable or job unknown: one hiccup must not fail the run
        first = cache.get_or_set(_follow_error_key(run_id), time.time(), timeout=3600)
        if time.time() - first < settings.UMBRA_FOLLOW_GRACE_S:
            return Again(settings.UMBRA_FOLLOW_INTERVAL_S, chain)
        transition(run_id, Run.State.FAILED, f"Ray job {run.submission_id} is gone: {ray_jobs.redact(str(exc))}")
        cache.delete(_follow_error_key(run_id))
        leases.release(_follow_key(run_id), chain)
        return DONE
    cache.delete(_follow_error_key(run_id))
    status = str(getattr(info.status, "value", info.status))
    tail = ray_jobs.logs_tail(client, run.submission_id)
    if tail and tail != run.log_tail:
        Run.objects.filter(pk=run_id).update(log_tail=tail)
        log_updated.send(sender=Run, run_id=run_id, tail=tail)
    target = _RAY_TO_RUN.get(status)
    if target == Run.State.FAILED:
        transition(run_id, target, failure_reason(info.message or "", tail))
    elif target and target != run.state:
        transition(run_id, target, info.message or f"Ray job {status.lower()}")
    if status in _RAY_ENDED:
        leases.release(_follow_key(run_id), chain)
        return DONE
    return Again(settings.UMBRA_FOLLOW_INTERVAL_S, chain)


def cancel(run_id: int) -> None:
    """Stop the run's Ray job (the follow chain then records ``cancelled``); a run with no
    job, or whose cluster does not answer, is recorded cancelled here."""
    run = Run.objects.get(pk=run_id)
    if run.is_terminal:
        return
    try:
        client = ray_jobs.client_for(run.config)
    except ray_jobs.ClusterUnavailable as exc:
        # Nothing can be running there; record the cancel so a retrying dispatch stops too.
        transition(run_id, Run.State.CANCELLED, f"cancelled; the cluster did not answer ({exc})")
        return
    if ray_jobs.job_exists(client, run.submission_id):
        client.stop_job(run.submission_id)
    else:
        transition(run_id, Run.State.CANCELLED, "cancelled before the Ray job started")


def runs_to_recover() -> tuple[list[int], list[int]]:
    """``(to_dispatch, to_follow)``: the unfinished runs a killed worker may have dropped.
    Dispatching runs (the queue had chosen them) are dispatched again (idempotent; dispatch
    then follows them); running runs get a new follow chain (it ends itself if a live one
    exists). Queued runs are not here: they wait in the queue (``runs.queue``), which the
    recovery pumps."""
    to_dispatch, to_follow = [], []
    for run_id, state in Run.objects.filter(
            state__in=[Run.State.DISPATCHING, Run.State.RUNNING]).values_list("pk", "state"):
        (to_follow if state == Run.State.RUNNING else to_dispatch).append(run_id)
    return to_dispatch, to_follow


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
# An exception's own line ("ValueError: ...", "ray.exceptions.RayTaskError(...): ..."), not a
# traceback's source line that merely names one ("raise ValueError(why)").
_ERROR = re.compile(r"^(\([^)]*pid=\d+[^)]*\) )?([\w.]+\.)?(\w*(Error|Exception)|KeyboardInterrupt|SystemExit)\b"
                    r"(\([^)]*\))?(:|$)|^Killed\b|OutOfMemory|\bOOM[ -]kill")
REASON_LINE_CHARS = 300  # a line a job prints (a reward's, say) must not crowd out the others


def failure_reason(message: str, log_tail: str) -> str:
    """A short, readable reason: the headline of Ray's message, then the log's last
    error lines (Ray's message repeats the whole log; ANSI colours are dropped)."""
    headline = _ANSI.sub("", message).strip().splitlines()[0] if message.strip() else "Ray job failed"
    lines = [ln.strip()[:REASON_LINE_CHARS] for ln in _ANSI.sub("", log_tail).splitlines() if ln.strip()]
    errors = [ln for ln in lines if _ERROR.search(ln)]
    detail = list(dict.fromkeys(errors[-3:] or lines[-5:]))  # de-duplicated, in order
    return ray_jobs.storable("\n".join([headline.split(", last available logs")[0], *detail])[:4000])
