"""Write-side operations on what-if simulations (HackSoft styleguide 'services'): views
store and queue simulations only through here.

The computing side (workloads, the simulator run, traces of runs) is ``whatif.simulator``;
its functions are re-exported here for the form and older callers. ``whatif.tasks``
imports the simulator, never this module, so queueing a task makes no import cycle.
"""
from __future__ import annotations

from django.db import transaction

from whatif.models import Simulation
from whatif.simulator import (MAX_CHART_CHUNKS, MAX_CHART_REQUESTS, fitted_step_model, run_trace_rows, simulate,
                              workload_for)
from whatif.tasks import run_simulation

__all__ = ["MAX_CHART_CHUNKS", "MAX_CHART_REQUESTS", "create_simulation", "fitted_step_model", "run_trace_rows",
           "simulate", "workload_for"]


def create_simulation(team, user, params: dict, trace: list[dict] | None, source_run=None) -> Simulation:
    """Store a queued simulation of ``params`` (and an uploaded or run ``trace``) for ``team``
    and hand it to Celery once committed."""
    with transaction.atomic():
        sim = Simulation.objects.create(team=team, created_by=user, label=params["label"], params=params,
                                        trace=trace, source_run=source_run)
        transaction.on_commit(lambda: run_simulation.delay(sim.pk))
    return sim
