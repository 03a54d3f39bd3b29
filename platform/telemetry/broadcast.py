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


def broadcast(run_id: int, message: BaseModel | dict) -> None:
    """Send ``message`` to the run's dashboards: one of the models of
    ``umbra.telemetry.messages``, or a dict with a ``type`` that is checked against them.

    Never raises: dashboards back-fill from the database, so a lost push only delays a point
    (a message that fits no model is logged as an error and not sent).
    """
    try:
        model = message if isinstance(message, MESSAGE_TYPES) else parse_message(message)
        # Encoded once here, not once per open dashboard (a 1,000-point batch to 100 sockets).
        text = model.model_dump_json()
        async_to_sync(get_channel_layer().group_send)(group_name(run_id), {"type": "run.message", "text": text})
    except Exception:
        log.exception("push to dashboards of run %s failed", run_id)
