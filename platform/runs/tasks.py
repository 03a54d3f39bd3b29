"""Celery tasks: dispatch a run as a Ray job, follow it, cancel it."""
from __future__ import annotations

import logging
import re

from celery import shared_task
from django.conf import settings

from runs import ray_jobs
from runs.models import Run
from runs.services import issue_ingest_token, transition

log = logging.getLogger(__name__)

_RAY_TO_RUN = {"PENDING": Run.State.DISPATCHING, "RUNNING": Run.State.RUNNING,
               "SUCCEEDED": Run.State.SUCCEEDED, "FAILED": Run.State.FAILED, "STOPPED": Run.State.CANCELLED}


@shared_task(bind=True, max_retries=5, default_retry_delay=5)
def dispatch_run(self, run_id: int) -> None:
    """Submit run ``run_id`` as a Ray job (idempotent: the job id is derived from the
    run id, and an existing job is never submitted again), then start following it."""
    run = Run.objects.select_related("experiment").filter(pk=run_id).first()
    if run is None or run.is_terminal:  # deleted or cancelled while queued
        return
    transition(run_id, Run.State.DISPATCHING, "submitting to Ray")
    try:
        client = ray_jobs.client_for(run.config)
        if not ray_jobs.job_exists(client, run.submission_id):
            token = issue_ingest_token(run)
            ray_jobs.submit(client, run.submission_id, run.pk, run.config, token)
    except ray_jobs.ClusterUnavailable as exc:
        if self.request.retries >= self.max_retries:
            transition(run_id, Run.State.FAILED, str(exc))
            return
        raise self.retry(exc=exc)
    Run.objects.filter(pk=run_id).update(ray_job_id=run.submission_id)
    follow_run.apply_async((run_id,), countdown=1)


@shared_task
def follow_run(run_id: int) -> None:
    """Poll the run's Ray job once: record state changes and the log tail, then
    schedule the next poll unless the run has ended."""
    run = Run.objects.get(pk=run_id)
    if run.is_terminal:
        return
    client = ray_jobs.client_for(run.config)
    try:
        info = client.get_job_info(run.submission_id)
    except Exception as exc:  # cluster gone or job unknown
        transition(run_id, Run.State.FAILED, f"Ray job {run.submission_id} is gone: {exc}")
        return
    status = str(getattr(info.status, "value", info.status))
    tail = ray_jobs.logs_tail(client, run.submission_id)
    if tail:
        Run.objects.filter(pk=run_id).update(log_tail=tail)
    target = _RAY_TO_RUN.get(status)
    if target == Run.State.FAILED:
        transition(run_id, target, failure_reason(info.message or "", tail))
    elif target and target != run.state:
        transition(run_id, target, info.message or f"Ray job {status.lower()}")
    if status not in ("SUCCEEDED", "FAILED", "STOPPED"):
        follow_run.apply_async((run_id,), countdown=settings.UMBRA_FOLLOW_INTERVAL_S)


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
