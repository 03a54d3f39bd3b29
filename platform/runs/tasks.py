"""Celery tasks of the runs app: thin wrappers around ``runs.dispatch`` and
``runs.queue``, which hold the logic. Each task calls one function and schedules what it
answers (the next poll, a look again later, a retry with back-off).

The queue is pumped (:func:`request_pump`) when a run is submitted or resumed, when one
ends or is cancelled (``runs.receivers``), on every worker start, and every
``UMBRA_QUEUE_RETRY_S`` seconds while runs wait. Each of these asks for at most one pump
message at a time (a flag in the cache), so a burst of submissions does not pile up
tasks in Redis.

The task names (``runs.tasks.dispatch_run`` and so on) are what Celery routes by and what
queued and scheduled messages in Redis carry: keep them.
"""
from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings
from django.core.cache import cache

from runs import dispatch, queue
from runs.models import Run

log = logging.getLogger(__name__)
# Set while a pump message is sent and not yet started; lapses if that message is lost.
_PUMP_REQUESTED_KEY, _PUMP_REQUESTED_S = "runs:queue:pump-requested", 60
# Set while a delayed pump is scheduled (cleared when it starts; lapses a minute after it
# was due, should its message be lost).
_PUMP_SCHEDULED_KEY, _PUMP_SCHEDULED_SLACK_S = "runs:queue:pump-scheduled", 60
# Seconds before a pump that found another pump deciding looks again (that one may have
# read the queue before the run that asked for this pump was stored).
PUMP_BUSY_WAIT_S = 2


def request_pump() -> None:
    """Have the queue looked at soon, unless a pump that has not started yet is already sent."""
    if cache.add(_PUMP_REQUESTED_KEY, 1, timeout=_PUMP_REQUESTED_S):
        pump_queue.delay()


def _schedule_pump(after_s: float) -> None:
    """Have the queue looked at in ``after_s`` seconds, unless a pump is already scheduled."""
    if cache.add(_PUMP_SCHEDULED_KEY, 1, timeout=int(after_s) + _PUMP_SCHEDULED_SLACK_S):
        pump_queue.apply_async(kwargs={"scheduled": True}, countdown=after_s)


@shared_task
def pump_queue(scheduled: bool = False) -> int:
    """Dispatch the queued runs their clusters can hold now (``runs.queue.pump``); look
    again later while runs wait. ``scheduled``: this is the delayed look. Returns how many
    runs it dispatched."""
    cache.delete(_PUMP_REQUESTED_KEY)  # a request from now on needs a pump after this one
    if scheduled:
        cache.delete(_PUMP_SCHEDULED_KEY)
    decision = queue.pump()
    if decision is None:  # another pump decides
        _schedule_pump(PUMP_BUSY_WAIT_S)
        return 0
    _send_dispatches(decision.dispatched)
    if decision.waiting:
        _schedule_pump(settings.UMBRA_QUEUE_RETRY_S)
    return len(decision.dispatched)


def _send_dispatches(run_ids: list[int]) -> None:
    """A dispatch message per run, carrying the attempt it is for (see ``dispatch_run``)."""
    for run_id, attempt in Run.objects.filter(pk__in=run_ids).values_list("pk", "attempt"):
        dispatch_run.delay(run_id, attempt)


@shared_task(bind=True, max_retries=6)
def dispatch_run(self, run_id: int, attempt: int | None = None) -> None:
    """Submit run ``run_id`` as a Ray job (``runs.dispatch.dispatch``), then start following it.

    Submits at once, whatever the cluster holds: sent by the queue's pump for the runs it
    chose, and by the recovery for runs it had chosen (``dispatching``), with the
    ``attempt`` they chose, so that a message outliving a cancel and resume does nothing
    (None: a message from before attempts were sent, or a direct call)."""
    step = dispatch.dispatch(run_id, final_try=self.request.retries >= self.max_retries, attempt=attempt)
    if isinstance(step, dispatch.Retry):
        # Backing off 5, 10, 20, 40, 60, 60 s: a busy or restarting head gets ~3 minutes.
        raise self.retry(exc=step.error, countdown=min(5 * 2 ** self.request.retries, 60))
    if isinstance(step, dispatch.Again):
        dispatch_run.apply_async((run_id, attempt), countdown=step.after_s)
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
    run on every worker start by ``umbra_site.celery``), and pump the queue: the queued
    runs wait in the database, whatever happened to the messages. Returns how many runs
    were taken up (dispatched again or followed)."""
    to_dispatch, to_follow = dispatch.runs_to_recover()
    _send_dispatches(to_dispatch)
    for run_id in to_follow:
        follow_run.delay(run_id)
    # Not request_pump: its flag may be left by a pump message the killed worker held.
    cache.delete(_PUMP_SCHEDULED_KEY)
    pump_queue.delay()
    if to_dispatch or to_follow:
        log.info("took up %d unfinished runs", len(to_dispatch) + len(to_follow))
    return len(to_dispatch) + len(to_follow)
