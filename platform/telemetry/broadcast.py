"""Push messages to every dashboard open on a run (Channels group ``run-<id>``)."""
from __future__ import annotations

import logging

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from pydantic import BaseModel

from umbra.telemetry.messages import MESSAGE_TYPES, parse_message

log = logging.getLogger(__name__)


def group_name(run_id: int) -> str:
    return f"run-{run_id}"


def team_group_name(team_id: int) -> str:
    """The Channels group of a team's open runs tables."""
    return f"team-runs-{team_id}"


def broadcast_to_team(team_id: int, message: BaseModel | dict) -> None:
    """Send ``message`` to the team's open runs tables (never raises, as ``broadcast``)."""
    _send(team_group_name(team_id), message, f"runs table of team {team_id}")


def broadcast(run_id: int, message: BaseModel | dict) -> None:
    """Send ``message`` to the run's dashboards: one of the models of
    ``umbra.telemetry.messages``, or a dict with a ``type`` that is checked against them.

    Never raises: dashboards back-fill from the database, so a lost push only delays a point
    (a message that fits no model is logged as an error and not sent).
    """
    _send(group_name(run_id), message, f"dashboards of run {run_id}")


def _send(group: str, message: BaseModel | dict, what: str) -> None:
    try:
        model = message if isinstance(message, MESSAGE_TYPES) else parse_message(message)
        # Encoded once here, not once per open dashboard (a 1,000-point batch to 100 sockets).
        text = model.model_dump_json()
        async_to_sync(get_channel_layer().group_send)(group, {"type": "run.message", "text": text})
    except Exception:
        log.exception("push to %s failed", what)
