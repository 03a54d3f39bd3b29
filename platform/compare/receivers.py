"""What the compare app does when a run changes state (``runs.signals.state_changed``,
connected in ``compare.apps``): a finished run gets its comparison caches warmed, so runs
never imports compare's (or telemetry's) tasks."""
from __future__ import annotations

from compare.tasks import warm_run_caches
from runs.models import Run


def warm_caches_of_finished_run(sender, run_id: int, state: str, **kwargs) -> None:
    """Have a Celery task warm a finished run's cached series and statistics."""
    if state in Run.TERMINAL:
        warm_run_caches.delay(run_id)
