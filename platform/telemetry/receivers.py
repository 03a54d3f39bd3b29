"""What the telemetry app does when a run changes (``runs.signals``, connected in
``telemetry.apps``): the runs app announces, telemetry pushes the new state to the run's
open dashboards and its team's runs table, and a new log tail to the dashboards, so runs
never imports telemetry."""
from __future__ import annotations

from runs.models import Run
from telemetry.broadcast import broadcast, broadcast_to_team
from umbra.telemetry.messages import LogMessage, RunRowMessage, StateMessage

MAX_PUSHED_LOG = 64_000  # characters: the tail is short, but a frame must stay far below 1 MiB


def push_state_to_dashboards(sender, run_id: int, state: str, reason: str = "", **kwargs) -> None:
    """Send the run's new state and its reason (first 500 characters) to open dashboards
    and to its team's open runs tables."""
    broadcast(run_id, StateMessage(state=state, reason=reason[:500]))
    team_id = Run.objects.filter(pk=run_id).values_list("experiment__team_id", flat=True).first()
    if team_id is not None:
        broadcast_to_team(team_id, RunRowMessage(run=run_id, state=state))


def push_log_to_dashboards(sender, run_id: int, tail: str, **kwargs) -> None:
    """Send the job log's new tail (its last 64,000 characters) to open dashboards."""
    broadcast(run_id, LogMessage(tail=tail[-MAX_PUSHED_LOG:]))
