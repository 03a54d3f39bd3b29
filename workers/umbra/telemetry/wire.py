"""The metric batch, the one wire format from the Ray job to the platform (pydantic, Django-free).

The job's ``TelemetryClient`` builds its batches with these models, so a malformed batch fails
in the job with a field error; the platform validates the same JSON with the same models
before anything is stored (``telemetry.views.ingest_metrics``). Strict types, unknown keys
refused, no NUL characters (PostgreSQL text cannot hold them), finite numbers, bounded sizes.
"""
from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

MAX_POINTS = 10_000
MAX_TRACE_REQUESTS = 100_000
MAX_EVENTS = 100  # notes per batch
INT32 = 2**31 - 1  # PostgreSQL integer columns
# strict: "5" is not an integer and true is not a number; allow_inf_nan: NaN/inf refused everywhere
STRICT = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


def _no_nul(v: str) -> str:
    # PostgreSQL text and jsonb cannot hold NUL: refuse it here (400), not in the INSERT (500).
    if "\x00" in v:
        raise ValueError("must not contain NUL characters")
    return v


Text = Annotated[str, AfterValidator(_no_nul)]


class PointIn(BaseModel):
    """``name`` like ``rollout/time_s``; ``step`` = iteration; ``value`` finite."""

    model_config = STRICT
    name: str = Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9_./{}-]+$")
    step: int = Field(ge=0, le=INT32)
    value: float

    @field_validator("value")
    @classmethod
    def _finite(cls, v: float) -> float:
        if not math.isfinite(v):
            raise ValueError("value must be finite")
        return v


class RequestRow(BaseModel):
    """One request of a trace (times in seconds from the rollout start)."""

    model_config = STRICT
    group: int = Field(ge=0, le=INT32)
    index: int = Field(ge=0, le=INT32)
    instance: int | None = Field(None, ge=0, le=INT32)
    start_s: float = Field(ge=0, le=1e7)
    finish_s: float = Field(ge=0, le=1e7)
    prompt_tokens: int | None = Field(None, ge=0, le=INT32)
    output_tokens: int = Field(ge=0, le=INT32)
    finish_reason: Text | None = Field(None, max_length=20)
    policy_version: int | None = Field(None, ge=0, le=INT32)
    # [instance, start_s, finish_s, tokens] per chunk (divided rollout)
    chunks: list[tuple[int, float, float, int]] = Field(default_factory=list, max_length=100_000)

    @model_validator(mode="after")
    def _ordered(self) -> "RequestRow":
        if self.finish_s < self.start_s:
            raise ValueError("finish_s is before start_s")
        return self


class TraceMeta(BaseModel):
    """The rollout set-up a trace ran on (what the simulator needs to replay it)."""

    model_config = STRICT
    policy: Text = Field(max_length=40)
    instances: int = Field(ge=1, le=INT32)
    capacity: int = Field(ge=1, le=INT32)  # most concurrent requests per instance (from the KV budget)
    kv_cache_gib: int = Field(ge=1, le=INT32)
    max_tokens: int = Field(ge=1, le=INT32)
    # how the policy was admitted (Policy.admission): worst-case cap, KV ledger, or the engine
    admission: Literal["cap", "kv", "engine"] = "cap"


class TraceIn(BaseModel):
    """One iteration's per-request trace and the set-up it ran on. In Python a chunk is a
    tuple; on the wire it is a JSON array."""

    model_config = STRICT
    iteration: int = Field(ge=0, le=INT32)
    requests: list[RequestRow] = Field(max_length=MAX_TRACE_REQUESTS)
    meta: TraceMeta | None = None


class BatchIn(BaseModel):
    """A metric batch: ``seq`` numbers batches of one run from 1; ``events``: notes for the
    run's event log (e.g. a rollout instance died and was replaced)."""

    model_config = STRICT
    seq: int = Field(ge=1, le=INT32)
    points: list[PointIn] = Field(max_length=MAX_POINTS)
    trace: TraceIn | None = None
    events: list[Annotated[Text, Field(min_length=1, max_length=1000)]] = Field(default_factory=list,
                                                                                 max_length=MAX_EVENTS)
