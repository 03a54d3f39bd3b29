"""The metric-batch wire format, validated with pydantic before anything is stored."""
from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, Field, field_validator

MAX_POINTS = 10_000
MAX_TRACE_REQUESTS = 100_000


class PointIn(BaseModel):
    """``name`` like ``rollout/time_s``; ``step`` = iteration; ``value`` finite."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9_./{}-]+$")
    step: int = Field(ge=0, le=2**31 - 1)
    value: float

    @field_validator("value")
    @classmethod
    def _finite(cls, v: float) -> float:
        if not math.isfinite(v):
            raise ValueError("value must be finite")
        return v


class RequestRow(BaseModel):
    """One request of a trace (times in seconds from the rollout start)."""

    model_config = ConfigDict(extra="forbid")
    group: int = Field(ge=0)
    index: int = Field(ge=0)
    instance: int | None = None
    start_s: float
    finish_s: float
    output_tokens: int = Field(ge=0)
    finish_reason: str | None = Field(None, max_length=20)
    policy_version: int | None = None
    # [instance, start_s, finish_s, tokens] per chunk (divided rollout)
    chunks: list[tuple[int, float, float, int]] = Field(default_factory=list, max_length=100_000)


class TraceIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    iteration: int = Field(ge=0)
    requests: list[RequestRow] = Field(max_length=MAX_TRACE_REQUESTS)


class BatchIn(BaseModel):
    """A metric batch: ``seq`` numbers batches of one run from 1."""

    model_config = ConfigDict(extra="forbid")
    seq: int = Field(ge=1, le=2**31 - 1)
    points: list[PointIn] = Field(max_length=MAX_POINTS)
    trace: TraceIn | None = None
