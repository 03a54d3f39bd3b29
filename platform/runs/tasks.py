"""Celery tasks of the runs app: thin wrappers around ``runs.dispatch``, which holds the
logic. Each task calls one dispatch function and schedules what it answers (the next
poll, a look again later, a retry with back-off).

The task names (``runs.tasks.dispatch_run`` and so on) are what Celery routes by and what
queued and scheduled messages in Redis carry: keep them.
"""
from __future__ import annotations

import logging

from celery import shared_task

from runs import dispatch

log = logging.getLogger(__name__)


@shared_task(bind=True, max_retries=6)
def dispatch_run(self, run_id: int) -> None:
    """Submit run ``run_id`` as a Ray job (``runs.dispatch.dispatch``), then start following it."""
    step = dispatch.dispatch(run_id, final_try=self.request.retries >= self.max_retries)
    if isinstance(step, dispatch.Retry):
        # Backing off 5, 10, 20, 40, 60, 60 s: a busy or restarting head gets ~3 minutes.
        raise self.retry(exc=step.error, countdown=min(5 * 2 ** self.request.retries, 60))
    if isinstance(step, dispatch.Again):
        dispatch_run.apply_async((run_id,), countdown=step.after_s)
    elif isinstance(step, dispatch.StartFollowing):
        follow_run.apply_async((run_id,), countdown=step.after_s)


@shared_task
def follow_run(run_id: int, chain: str | None = None) -> None:
    """Poll the run's Ray job once (``runs.dispatch.follow``) and schedule the next poll of
    the same ``chain`` unless the run has ended or another chain follows it."""
    step = dispatch.follow(run_id, chain)
    if isinstance(step, dispatch.Again):
        follow_run.apply_async((run_id, step.chain), countdown=step.after_s)


@shared_task
def cancel_run(run_id: int) -> None:
    """Stop the run's Ray job (``runs.dispatch.cancel``); the follow task then records ``cancelled``."""
    dispatch.cancel(run_id)


@shared_task
def recover_runs() -> int:
    """Take up every run a killed worker may have dropped (``runs.dispatch.runs_to_recover``;
    run on every worker start by ``umbra_site.celery``). Returns how many runs."""
    to_dispatch, to_follow = dispatch.runs_to_recover()
    for run_id in to_dispatch:
        dispatch_run.delay(run_id)
    for run_id in to_follow:
        follow_run.delay(run_id)
    if to_dispatch or to_follow:
        log.info("took up %d unfinished runs", len(to_dispatch) + len(to_follow))
    return len(to_dispatch) + len(to_follow)
