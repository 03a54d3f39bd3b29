"""Celery tasks: dispatch a run as a Ray job, follow it, cancel it, and take runs up
again after a worker was killed.

A killed worker's tasks stay unacknowledged in Redis until the broker's visibility
timeout (an hour), so nothing would follow its runs for that long: every worker that
starts runs :func:`recover_runs` (``umbra_site.celery``). Dispatch is idempotent and a
follow chain holds a lease per run, so the duplicates this makes (and the killed
worker's tasks, when Redis finally redelivers them) collapse to one Ray job and one
chain of polls.
"""
from __future__ import annotations

import logging
import re
import time
import uuid

from celery import shared_task
from django.conf import settings
from django.core.cache import cache
from django.db import transaction

from runs import leases, ray_jobs
from runs.models import Run, submission_id
from runs.services import issue_ingest_token, transition
from telemetry.selectors import last_batch_seq

log = logging.getLogger(__name__)

_RAY_TO_RUN = {"PENDING": Run.State.DISPATCHING, "RUNNING": Run.State.RUNNING,
               "SUCCEEDED": Run.State.SUCCEEDED, "FAILED": Run.State.FAILED, "STOPPED": Run.State.CANCELLED}
# Seconds one dispatcher may take to check, issue the token and submit; a killed one's lease lapses after it.
DISPATCH_LEASE_S = 60
# Seconds between two looks of a dispatch that found another dispatcher's lease.
DISPATCH_WAIT_S = 5


def follow_lease_s() -> float:
    """Seconds a follow chain's lease lasts: a few polls, so a live chain renews it in
    time, while a killed worker's chain loses it soon."""
    return 3 * settings.UMBRA_FOLLOW_INTERVAL_S + 10


def _follow_key(run_id: int) -> str:
    return f"runs:follow:{run_id}"


def _follow_error_key(run_id: int) -> str:
    """Since when the cluster has not answered about the run's job (cleared by an answer)."""
    return f"runs:follow-error-since:{run_id}"


@shared_task(bind=True, max_retries=6)
def dispatch_run(self, run_id: int) -> None:
    """Submit run ``run_id`` as a Ray job (idempotent: the job id is derived from the
    run id, and an existing job is never submitted again), then start following it.

    One dispatcher per job at a time (a lease): two would each issue an ingestion token,
    and the job would carry one the platform no longer accepts.
    """
    run = Run.objects.select_related("experiment").filter(pk=run_id).first()
    if run is None or run.is_terminal:  # deleted or cancelled while queued
        return
    transition(run_id, Run.State.DISPATCHING, "submitting to Ray")
    key, owner = f"runs:dispatch:{run.submission_id}", uuid.uuid4().hex
    try:
        client = ray_jobs.client_for(run.config)
        if not leases.hold(key, owner, DISPATCH_LEASE_S):
            # Another worker is submitting it, or was killed doing so: look again later.
            dispatch_run.apply_async((run_id,), countdown=DISPATCH_WAIT_S)
            return
        try:
            if run.attempt:
                _stop_earlier_attempts(client, run)
            if not ray_jobs.job_exists(client, run.submission_id):
                token = issue_ingest_token(run)
                ray_jobs.submit(client, run.submission_id, run.pk, run.config, token, last_batch_seq(run.pk))
        finally:
            leases.release(key, owner)
    except ray_jobs.ClusterUnavailable as exc:
        if self.request.retries >= self.max_retries:
            transition(run_id, Run.State.FAILED, str(exc))
            return
        # Backing off 5, 10, 20, 40, 60, 60 s: a busy or restarting head gets ~3 minutes.
        raise self.retry(exc=exc, countdown=min(5 * 2 ** self.request.retries, 60))
    with transaction.atomic():  # cancelled or resumed again while we submitted: that job must not run
        now = Run.objects.select_for_update().get(pk=run_id)
        stale = now.is_terminal or now.attempt != run.attempt
        if not stale:
            Run.objects.filter(pk=run_id).update(ray_job_id=run.submission_id)
    if stale:
        log.info("run %s changed while %s was submitted; stopping that job", run_id, run.submission_id)
        client.stop_job(run.submission_id)
        return
    follow_run.apply_async((run_id,), countdown=1)


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


@shared_task
def follow_run(run_id: int, chain: str | None = None) -> None:
    """Poll the run's Ray job once: record state changes and the log tail, then
    schedule the next poll (same ``chain``) unless the run has ended.

    A chain holds the lease ``runs:follow:<run_id>`` and ends when another chain holds
    it, so duplicate chains collapse to one. A new chain (``chain`` None) that finds the
    lease held looks once more when the lease has had time to lapse: its holder may
    have died with its worker.
    """
    run = Run.objects.filter(pk=run_id).first()
    if run is None or run.is_terminal:
        return
    new, chain = chain is None, chain or uuid.uuid4().hex
    if not leases.hold(_follow_key(run_id), chain, follow_lease_s()):
        if new:
            follow_run.apply_async((run_id, chain), countdown=follow_lease_s())
        return
    try:
        client = ray_jobs.client_for(run.config)
        info = client.get_job_info(run.submission_id)
    except Exception as exc:  # cluster unreachable or job unknown: one hiccup must not fail the run
        first = cache.get_or_set(_follow_error_key(run_id), time.time(), timeout=3600)
        if time.time() - first < settings.UMBRA_FOLLOW_GRACE_S:
            follow_run.apply_async((run_id, chain), countdown=settings.UMBRA_FOLLOW_INTERVAL_S)
            return
        transition(run_id, Run.State.FAILED, f"Ray job {run.submission_id} is gone: {ray_jobs.redact(str(exc))}")
        cache.delete(_follow_error_key(run_id))
        leases.release(_follow_key(run_id), chain)
        return
    cache.delete(_follow_error_key(run_id))
    status = str(getattr(info.status, "value", info.status))
    tail = ray_jobs.logs_tail(client, run.submission_id)
    if tail:
        Run.objects.filter(pk=run_id).update(log_tail=tail)
    target = _RAY_TO_RUN.get(status)
    if target == Run.State.FAILED:
        transition(run_id, target, failure_reason(info.message or "", tail))
    elif target and target != run.state:
        transition(run_id, target, info.message or f"Ray job {status.lower()}")
    if status in ("SUCCEEDED", "FAILED", "STOPPED"):
        leases.release(_follow_key(run_id), chain)
    else:
        follow_run.apply_async((run_id, chain), countdown=settings.UMBRA_FOLLOW_INTERVAL_S)


@shared_task
def recover_runs() -> int:
    """Take up every run a killed worker may have dropped: queued and dispatching runs
    are dispatched again (idempotent; dispatch then follows them), running runs get a
    new follow chain (it ends itself if a live one exists). Returns how many runs."""
    runs = list(Run.objects.filter(state__in=[Run.State.QUEUED, Run.State.DISPATCHING, Run.State.RUNNING])
                .values_list("pk", "state"))
    for run_id, state in runs:
        if state == Run.State.RUNNING:
            follow_run.delay(run_id)
        else:
            dispatch_run.delay(run_id)
    if runs:
        log.info("took up %d unfinished runs", len(runs))
    return len(runs)


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_ERROR = re.compile(r"(Error|Exception|Killed|OOM)\b")


def failure_reason(message: str, log_tail: str) -> str:
    """A short, readable reason: the headline of Ray's message, then the log's last
    error lines (Ray's message repeats the whole log; ANSI colours are dropped)."""
    headline = _ANSI.sub("", message).strip().splitlines()[0] if message.strip() else "Ray job failed"
    lines = [ln.strip() for ln in _ANSI.sub("", log_tail).splitlines() if ln.strip()]
    errors = [ln for ln in lines if _ERROR.search(ln)]
    detail = list(dict.fromkeys(errors[-3:] or lines[-5:]))  # de-duplicated, in order
    return "\n".join([headline.split(", last available logs")[0], *detail])[:4000]


@shared_task
def cancel_run(run_id: int) -> None:
    """Stop the run's Ray job; the follow task then records ``cancelled``."""
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
