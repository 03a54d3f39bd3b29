"""Write-side operations on what-if simulations (HackSoft styleguide 'services'): views
store and queue simulations only through here.

The computing side (workloads, the simulator run, traces of runs) is ``whatif.simulator``;
running a stored simulation is ``whatif.execution`` (called by the thin task in
``whatif.tasks``, which never imports this module, so queueing makes no import cycle).
"""
from __future__ import annotations

from django.db import transaction

from whatif.models import Simulation
from whatif.tasks import run_simulation


def create_simulation(team, user, params: dict, trace: list[dict] | None, source_run=None) -> Simulation:
    """Store a queued simulation of ``params`` (and an uploaded or run ``trace``) for ``team``
    and hand it to Celery once committed."""
    with transaction.atomic():
        sim = Simulation.objects.create(team=team, created_by=user, label=params["label"], params=params,
                                        trace=trace, source_run=source_run)
        transaction.on_commit(lambda: run_simulation.delay(sim.pk))
    return sim
