"""The messages the platform pushes to a run's open dashboards over its WebSocket.

One pydantic model per message ``type``; the platform builds every push from these
(``telemetry.broadcast``), and ``frontend/src/types.ts`` declares the same shapes for the
browser (``tests/unit/test_wire_contract.py`` keeps the two in step). Points and trace
rows reuse the batch models of ``umbra.telemetry.wire``: a dashboard receives them as the
job sent them.
"""
from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from umbra.telemetry.wire import PointIn, RequestRow, TraceMeta

# Built by the platform, not read from outside: strict types and no stray keys catch a bug early.
MESSAGE = ConfigDict(extra="forbid", strict=True)


class MetricsMessage(BaseModel):
    """Points of a batch just stored (one per (name, step); a later one replaces an earlier)."""

    model_config = MESSAGE
    type: Literal["metrics"] = "metrics"
    points: list[PointIn]


class TraceMessage(BaseModel):
    """An iteration's request trace, thinned for the browser (``telemetry.services.trace_for_browser``)."""

    model_config = MESSAGE
    type: Literal["trace"] = "trace"
    iteration: int
    requests: list[RequestRow]
    meta: TraceMeta | None = None


class StateMessage(BaseModel):
    """The run moved to ``state`` (a lifecycle transition) for ``reason``."""

    model_config = MESSAGE
    type: Literal["state"] = "state"
    state: str
    reason: str = ""


class EventNote(BaseModel):
    """One entry of the run's event log: ``kind`` (``job`` for the job's notes), ``at`` ISO 8601."""

    model_config = MESSAGE
    kind: str
    reason: str
    at: str


class EventsMessage(BaseModel):
    """Notes of a batch just stored (e.g. a rollout instance died and was replaced)."""

    model_config = MESSAGE
    type: Literal["events"] = "events"
    events: list[EventNote]


class LogMessage(BaseModel):
    """The tail of the run's Ray job log as last polled (raw: the page strips its ANSI colours)."""

    model_config = MESSAGE
    type: Literal["log"] = "log"
    tail: str


class RunRowMessage(BaseModel):
    """To a team's runs table (``/ws/teams/<slug>/runs/``): run ``run`` changed; ``state`` when
    it moved, ``values`` the latest key numbers of a batch just stored (metric name: value),
    ``iterations_done`` when an iteration ended."""

    model_config = MESSAGE
    type: Literal["run_row"] = "run_row"
    run: int
    state: str | None = None
    values: dict[str, float] = {}
    iterations_done: int | None = None


SocketMessage = Annotated[Union[MetricsMessage, TraceMessage, StateMessage, EventsMessage, LogMessage,
                                RunRowMessage], Field(discriminator="type")]
MESSAGE_TYPES: tuple[type[BaseModel], ...] = (MetricsMessage, TraceMessage, StateMessage, EventsMessage, LogMessage,
                                              RunRowMessage)
_ADAPTER: TypeAdapter = TypeAdapter(SocketMessage)


def parse_message(message: dict) -> BaseModel:
    """The message model of a ``{"type": ..., ...}`` dict. Raises pydantic.ValidationError
    for an unknown type or a field that does not fit it."""
    return _ADAPTER.validate_python(message)
