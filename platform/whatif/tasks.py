"""Celery task: run a stored simulation."""
from __future__ import annotations

import logging

from celery import shared_task

log = logging.getLogger(__name__)


TIME_LIMIT_S = 300  # a simulation past this is failed, so one request cannot hold a worker for long


@shared_task(name="whatif.run_simulation", soft_time_limit=TIME_LIMIT_S, time_limit=TIME_LIMIT_S + 30)
def run_simulation(simulation_id: int) -> str:
    """Simulate and store the results (``done``), or the error (``failed``; also after
    TIME_LIMIT_S seconds). Idempotent: a simulation that already ended is left alone.
    Returns the final state."""
    from celery.exceptions import SoftTimeLimitExceeded

    from whatif.models import Simulation
    from whatif.simulator import simulate

    updated = Simulation.objects.filter(pk=simulation_id, state=Simulation.State.QUEUED).update(
        state=Simulation.State.RUNNING)
    sim = Simulation.objects.filter(pk=simulation_id).first()
    if sim is None or (not updated and sim.state != Simulation.State.RUNNING):
        return sim.state if sim else "missing"
    try:
        results = simulate(sim.params, sim.trace)
    except SoftTimeLimitExceeded:
        Simulation.objects.filter(pk=sim.pk).update(
            state=Simulation.State.FAILED, error=f"the simulation took longer than {TIME_LIMIT_S} s: "
                                                 "simulate fewer policies, instances or requests")
        return Simulation.State.FAILED
    except Exception as exc:  # a failed simulation is shown on its page, not lost in a log
        log.exception("simulation %s failed", simulation_id)
        Simulation.objects.filter(pk=sim.pk).update(state=Simulation.State.FAILED, error=str(exc)[:2000])
        return Simulation.State.FAILED
    Simulation.objects.filter(pk=sim.pk).update(state=Simulation.State.DONE, results=results)
    return Simulation.State.DONE
