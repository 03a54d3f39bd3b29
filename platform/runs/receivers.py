"""What the runs app itself does when a run changes state (``runs.signals.state_changed``,
connected in ``runs.apps``): a run that ended frees its share of the cluster, so the
queue is looked at again (``runs.tasks.request_pump``). Through the signal because the
lifecycle, which sends it, sits below the tasks."""
from __future__ import annotations

from runs.models import Run
from runs.tasks import request_pump


def pump_queue_when_a_run_ends(sender, run_id: int, state: str, **kwargs) -> None:
    """Have the queue dispatch what now fits once a run has succeeded, failed or been cancelled."""
    if state in Run.TERMINAL:
        request_pump()
