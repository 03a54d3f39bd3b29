"""Write-side operations on runs (HackSoft styleguide 'services')."""
from __future__ import annotations

import hashlib
import secrets

from django.db import transaction
from django.utils import timezone

from runs.models import Experiment, Run, RunEvent
from telemetry.broadcast import broadcast
from umbra.config import RunConfig

# Allowed moves of the lifecycle; anything else is ignored (e.g. a late poll after cancel).
_NEXT = {
    Run.State.QUEUED: {Run.State.DISPATCHING, Run.State.CANCELLED, Run.State.FAILED},
    Run.State.DISPATCHING: {Run.State.RUNNING, Run.State.SUCCEEDED, Run.State.FAILED, Run.State.CANCELLED},
    Run.State.RUNNING: {Run.State.SUCCEEDED, Run.State.FAILED, Run.State.CANCELLED},
    # Resume only (request_resume): a new attempt continues from the latest checkpoint.
    Run.State.FAILED: {Run.State.QUEUED},
    Run.State.CANCELLED: {Run.State.QUEUED},
}
RESUMABLE = (Run.State.FAILED, Run.State.CANCELLED)


def transition(run_id: int, to_state: str, reason: str = "") -> bool:
    """Move run ``run_id`` to ``to_state``, storing a RunEvent and pushing the new state
    to open dashboards. Returns False (and changes nothing) for a move the lifecycle forbids."""
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run_id)
        if to_state not in _NEXT.get(run.state, set()):
            return False
        RunEvent.objects.create(run=run, from_state=run.state, to_state=to_state, reason=reason[:4000])
        run.state = to_state
        now = timezone.now()
        if to_state == Run.State.RUNNING:
            run.started_at = now
        if to_state in Run.TERMINAL:
            run.finished_at = now
        run.save(update_fields=["state", "started_at", "finished_at"])
        transaction.on_commit(lambda: broadcast(run_id, {"type": "state", "state": to_state, "reason": reason[:500]}))
        if to_state in Run.TERMINAL:
            from telemetry.tasks import warm_run_caches

            transaction.on_commit(lambda: warm_run_caches.delay(run_id))
    return True


def create_run(user, team, experiment_name: str, config: RunConfig) -> Run:
    """Store a queued run of ``config`` under the team's experiment ``experiment_name``
    (created if new) and hand it to Celery for dispatch once committed."""
    from runs.tasks import dispatch_run

    with transaction.atomic():
        experiment, _ = Experiment.objects.get_or_create(team=team, name=experiment_name.strip())
        run = Run.objects.create(experiment=experiment, config=config.model_dump(), created_by=user)
        RunEvent.objects.create(run=run, from_state="", to_state=Run.State.QUEUED, reason="submitted")
        transaction.on_commit(lambda: dispatch_run.delay(run.pk))
    return run


def issue_ingest_token(run: Run) -> str:
    """A fresh ingestion token for ``run`` only (replacing any earlier one), valid for
    ``settings.UMBRA_INGEST_TOKEN_TTL_S`` seconds and while the run is live; only its
    sha256 is stored. Returns the plaintext token (43 URL-safe characters)."""
    from datetime import timedelta

    from django.conf import settings

    token = secrets.token_urlsafe(32)
    run.ingest_token_hash = hashlib.sha256(token.encode()).hexdigest()
    run.ingest_token_expires_at = timezone.now() + timedelta(seconds=settings.UMBRA_INGEST_TOKEN_TTL_S)
    run.save(update_fields=["ingest_token_hash", "ingest_token_expires_at"])
    return token


def request_resume(run: Run) -> bool:
    """Resume a failed or cancelled ``run``: a new attempt (its own Ray job) is queued and
    continues after the run's latest checkpoint (from the start when it has none); the
    iterations after the checkpoint run again and their metric points replace the old ones.

    Returns False (and changes nothing) when the run is not failed or cancelled.
    """
    from runs.tasks import dispatch_run

    with transaction.atomic():
        locked = Run.objects.select_for_update().get(pk=run.pk)
        if locked.state not in RESUMABLE:
            return False
        locked.attempt += 1
        locked.ray_job_id, locked.finished_at = "", None
        # The earlier attempt's token must not write into this attempt's history.
        locked.ingest_token_hash, locked.ingest_token_expires_at = "", None
        locked.save(update_fields=["attempt", "ray_job_id", "finished_at", "ingest_token_hash",
                                   "ingest_token_expires_at"])
        transition(run.pk, Run.State.QUEUED, f"resume requested: attempt {locked.attempt} continues from "
                                             "the latest checkpoint")
        transaction.on_commit(lambda: dispatch_run.delay(run.pk))
    return True


def request_cancel(run: Run) -> None:
    """Cancel ``run``: a queued run is cancelled at once; a dispatched one gets its
    Ray job stopped by a Celery task (the follow task records ``cancelled``)."""
    from runs.tasks import cancel_run

    if run.state == Run.State.QUEUED:
        transition(run.pk, Run.State.CANCELLED, "cancelled before dispatch")
    elif not run.is_terminal:
        cancel_run.delay(run.pk)
