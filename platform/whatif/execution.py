"""Running one stored simulation: claim it, simulate, store the results or the error
(the business logic behind the ``whatif.run_simulation`` Celery task)."""
from __future__ import annotations

import logging

log = logging.getLogger(__name__)


def execute_simulation(simulation_id: int, time_limit_s: int) -> str:
    """Simulate and store the results (``done``), or the error (``failed``; also when the
    task's soft time limit of ``time_limit_s`` seconds hits). Idempotent: a simulation that
    already ended is left alone. Returns the final state."""
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
            state=Simulation.State.FAILED, error=f"the simulation took longer than {time_limit_s} s: "
                                                 "simulate fewer policies, instances or requests")
        return Simulation.State.FAILED
    except Exception as exc:  # a failed simulation is shown on its page, not lost in a log
        log.exception("simulation %s failed", simulation_id)
        Simulation.objects.filter(pk=sim.pk).update(state=Simulation.State.FAILED, error=str(exc)[:2000])
        return Simulation.State.FAILED
    Simulation.objects.filter(pk=sim.pk).update(state=Simulation.State.DONE, results=results)
    return Simulation.State.DONE
