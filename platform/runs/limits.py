"""Limits on submitting runs: per team, how many may wait in the queue; per user, how
many may be submitted in a window of time (settings ``UMBRA_TEAM_MAX_QUEUED``,
``UMBRA_USER_MAX_SUBMISSIONS``, ``UMBRA_USER_SUBMISSION_WINDOW_S``; 0 = no limit).

Counted from the stored runs, so every web process and every restart sees the same
counts; ``runs.services.create_run`` checks them with the team and user rows locked, so
two concurrent submissions cannot both take the last place. (How many runs of a team
are dispatched at once is the queue's limit, ``UMBRA_TEAM_MAX_RUNNING``: those runs wait
rather than being refused.)
"""
from __future__ import annotations

import math
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from runs.models import Run


class SubmissionRefused(Exception):
    """A run may not be submitted now; ``str()`` says why and what to do.
    ``retry_after_s``: when it may be tried again, where that is known."""

    def __init__(self, message: str, retry_after_s: int | None = None):
        super().__init__(message)
        self.retry_after_s = retry_after_s


def check_team_queue(team) -> None:
    """Raise SubmissionRefused if ``team`` has its most runs waiting (a submission or a resume)."""
    most_queued = settings.UMBRA_TEAM_MAX_QUEUED
    waiting = Run.objects.filter(experiment__team=team, state=Run.State.QUEUED).count() if most_queued else 0
    if most_queued and waiting >= most_queued:
        raise SubmissionRefused(
            f"team '{team.slug}' has {waiting} run{'s' if waiting != 1 else ''} waiting in the queue; the limit "
            f"is {most_queued} (UMBRA_TEAM_MAX_QUEUED): try again once some have started, or cancel some")


def check_submission(user, team) -> None:
    """Raise SubmissionRefused if ``team`` has its most runs waiting, or ``user`` has
    submitted the most runs allowed in the current window."""
    check_team_queue(team)
    most, window = settings.UMBRA_USER_MAX_SUBMISSIONS, settings.UMBRA_USER_SUBMISSION_WINDOW_S
    if not most or not window or user is None:
        return
    since = timezone.now() - timedelta(seconds=window)
    recent = list(Run.objects.filter(created_by=user, created_at__gte=since)
                  .order_by("-created_at").values_list("created_at", flat=True)[:most])
    if len(recent) >= most:
        # A place frees when the oldest of the last `most` submissions leaves the window.
        retry = max(1, math.ceil((recent[-1] - since).total_seconds()))
        raise SubmissionRefused(
            f"you have submitted {most} runs in the last {_duration(window)}, the most allowed "
            f"(UMBRA_USER_MAX_SUBMISSIONS); try again in {_duration(retry)}", retry_after_s=retry)


def _duration(seconds: int) -> str:
    if seconds % 3600 == 0:
        return f"{seconds // 3600} h"
    if seconds >= 120:
        return f"{math.ceil(seconds / 60)} min"
    return f"{seconds} s"
