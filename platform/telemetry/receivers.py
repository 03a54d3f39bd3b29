"""What the telemetry app does when a run changes state (``runs.signals.state_changed``,
connected in ``telemetry.apps``): the runs app announces, telemetry pushes the new state
to the run's open dashboards, so runs never imports telemetry."""
from __future__ import annotations

from telemetry.broadcast import broadcast
from umbra.telemetry.messages import StateMessage


def push_state_to_dashboards(sender, run_id: int, state: str, reason: str = "", **kwargs) -> None:
    """Send the run's new state and its reason (first 500 characters) to open dashboards."""
    broadcast(run_id, StateMessage(state=state, reason=reason[:500]))
