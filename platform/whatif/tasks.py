"""Celery task: run a stored simulation."""
from __future__ import annotations

from celery import shared_task

TIME_LIMIT_S = 300  # a simulation past this is failed, so one request cannot hold a worker for long


@shared_task(name="whatif.run_simulation", soft_time_limit=TIME_LIMIT_S, time_limit=TIME_LIMIT_S + 30)
def run_simulation(simulation_id: int) -> str:
    """Simulate and store the results (``done``), or the error (``failed``; also after
    TIME_LIMIT_S seconds). Idempotent: a simulation that already ended is left alone.
    Returns the final state."""
    from whatif.execution import execute_simulation

    return execute_simulation(simulation_id, TIME_LIMIT_S)
