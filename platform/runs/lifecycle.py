"""The run lifecycle: which state moves are allowed, and the one function that makes them.

``queued -> dispatching -> running -> succeeded | failed | cancelled``; a failed or
cancelled run goes back to ``queued`` only through a resume (``runs.services.request_resume``).
Every move is stored as a RunEvent with its reason and announced, after commit, through
``runs.signals.state_changed``.
"""
from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from runs.models import Run, RunEvent
from runs.signals import state_changed

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
    """Move run ``run_id`` to ``to_state``, storing a RunEvent; once committed, receivers of
    ``state_changed`` push the new state to open dashboards. Returns False (and changes
    nothing) for a move the lifecycle forbids."""
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
        transaction.on_commit(lambda: state_changed.send(sender=Run, run_id=run_id, state=to_state, reason=reason))
    return True
