"""The files ``umbra bench spec-bound`` reads, checked with pydantic before any arithmetic: a
step cost (``umbra bench spec-cost --json`` or ``scripts/device/spec_cost_gpu.py --json``), an
acceptance profile (``umbra bench accept-ceiling --json``) and a rollout trace. Each loader
returns plain data or raises ValueError with a message naming the file."""
from __future__ import annotations

import json
import math
import os
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError, field_validator

# strict: a JSON number only (no "10.5", no true); bounded, so sums over a trace stay finite
Seconds = Annotated[float, Field(ge=0, le=1e9, allow_inf_nan=False, strict=True)]
Count = Annotated[int, Field(ge=0, strict=True)]
MAX_BYTES = {"cost": 10_000_000, "profile": 10_000_000, "trace": 500_000_000}


class Fit(BaseModel):
    """Alg. 1's step cost ``c0 + c_row B + c_draft B g`` in seconds."""

    model_config = ConfigDict(extra="ignore", strict=True)
    c0_s: Seconds
    row_s: Seconds
    draft_s: Seconds

    @field_validator("row_s")
    @classmethod
    def _some_cost(cls, v, info):
        if info.data.get("c0_s", 0) + v <= 0:
            raise ValueError("c0_s + row_s must be > 0")
        return v


def _table(raw) -> dict:
    """``{B: {g: seconds}}`` with integer keys, every step > 0 s and g = 0 measured at every B."""
    if not isinstance(raw, dict) or not raw:
        raise ValueError("table must map batch sizes to {draft length: seconds}")
    out: dict[int, dict[int, float]] = {}
    for b, row in raw.items():
        if not (isinstance(b, str) and b.isdigit() and int(b) >= 1) or int(b) in out:
            raise ValueError(f"table batch {b!r} is not a distinct integer >= 1")
        if not isinstance(row, dict) or "0" not in row:
            raise ValueError(f"table batch {b}: needs {{draft length: seconds}} with draft length 0")
        cells = {}
        for g, s in row.items():
            if not (isinstance(g, str) and g.isdigit()) or isinstance(s, bool) or not isinstance(s, (int, float)) \
                    or not math.isfinite(s) or s <= 0:
                raise ValueError(f"table batch {b}, draft length {g!r}: {s!r} is not a step time > 0 s")
            cells[int(g)] = float(s)
        out[int(b)] = cells
    return {str(b): {str(g): s for g, s in row.items()} for b, row in sorted(out.items())}


def _read_json(path: str, kind: str):
    if not os.path.isfile(path) or os.path.getsize(path) > MAX_BYTES[kind]:
        raise ValueError(f"{path} is not a regular file of at most {MAX_BYTES[kind] // 1_000_000} MB")
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ValueError(f"{path}: not JSON ({str(exc)[:200]})") from None


def load_cost(path: str, shape: str | None) -> dict:
    """The step cost: the fit's three coefficients, or ``{"table": ...}`` from a GPU file's ``shape``."""
    raw = _read_json(path, "cost")
    if not isinstance(raw, dict):
        raise ValueError(f"{path} is not a step-cost file (a JSON object)")
    try:
        if "shapes" in raw:  # scripts/device/spec_cost_gpu.py: one shape's fit and measured table
            shapes = raw["shapes"]
            if not isinstance(shapes, dict) or not shapes:
                raise ValueError("its shapes are not a non-empty object")
            if shape not in shapes:
                known = ", ".join(map(str, shapes))
                raise ValueError(f"holds shapes {known}: pick one with --cost-shape"
                                 + (f" ({shape!r} is none of them)" if shape else ""))
            entry = shapes[shape]
            if not isinstance(entry, dict):
                raise ValueError(f"shape {shape!r} is not an object")
            return {"table": _table(entry.get("table"))}  # its fit is only printed: the table is measured
        if shape is not None:
            raise ValueError("--cost-shape is for scripts/device/spec_cost_gpu.py files; this one has no shapes")
        if not raw.get("fit"):
            raise ValueError("holds no step-cost fit (time none and a draft<g> kind)")
        return Fit.model_validate(raw["fit"]).model_dump()
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ValueError(f"{path}: fit {'.'.join(map(str, first['loc'])) or ''}: {first['msg']}") from None
    except ValueError as exc:
        raise ValueError(f"{path} {exc}") from None


def load_profile(path: str) -> list[float]:
    """``[E(0), E(1), ...]``: tokens a step moves a row with g drafts, ``1 <= E(g) <= g + 1``."""
    raw = _read_json(path, "profile")
    tokens = raw.get("expected_tokens") if isinstance(raw, dict) else None
    if not isinstance(tokens, list) or len(tokens) < 2:
        raise ValueError(f"{path} holds no expected_tokens list (umbra bench accept-ceiling --json)")
    out = []
    for g, e in enumerate(tokens):
        if isinstance(e, bool) or not isinstance(e, (int, float)) or not math.isfinite(e) or not 1 <= e <= g + 1:
            raise ValueError(f"{path}: expected_tokens[{g}] = {e!r} is not within 1..{g + 1} tokens a step")
        out.append(float(e))
    return out


def load_pmax(path: str) -> list[list[float]]:
    """Every response's ``p_max`` by position (``umbra bench accept-ceiling --json``'s ``pmax``)."""
    raw = _read_json(path, "profile")
    rows = raw.get("pmax") if isinstance(raw, dict) else None
    if not isinstance(rows, list) or not rows or not all(isinstance(r, list) for r in rows):
        raise ValueError(f"{path} holds no pmax rows (umbra bench accept-ceiling --json, from this version on)")
    for r in rows:
        for p in r:
            if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
                raise ValueError(f"{path}: pmax holds {p!r}, not a probability")
    if not any(rows):
        raise ValueError(f"{path}: pmax holds no position")
    return [[float(p) for p in r] for r in rows]


class Record(BaseModel):
    """One request of a ``umbra bench rollout --trace`` file: its chunks (instance, start,
    finish, tokens) and when it finished."""

    model_config = ConfigDict(extra="ignore")
    policy: str | None = None
    finish_s: Seconds
    group: StrictInt | None = None
    finish_reason: str | None = None  # "length": clipped at max_tokens
    chunks: list[tuple[Count, Seconds, Seconds, Count]]

    @field_validator("chunks")
    @classmethod
    def _ordered(cls, v):
        for n, (_, start, finish, _) in enumerate(v):
            if finish < start:
                raise ValueError("a chunk finishes before it starts")
            if n and start < v[n - 1][1]:
                raise ValueError("a chunk starts before the request's previous chunk")
        return v


def _validation_message(exc: ValidationError) -> str:
    """The first error with the field it is about (``chunks.3.1: ...``)."""
    err = exc.errors()[0]
    where = ".".join(str(x) for x in err.get("loc", ()))
    return f"{where}: {err['msg']}" if where else err["msg"]


def load_trace(path: str, policy: str) -> list[dict]:
    """The trace's records of ``policy``, checked."""
    if not os.path.isfile(path) or os.path.getsize(path) > MAX_BYTES["trace"]:
        raise ValueError(f"{path} is not a regular file of at most 500 MB")
    out = []
    try:
        with open(path, encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    raw = json.loads(line)
                    if not isinstance(raw, dict) or raw.get("policy") != policy:
                        continue
                    out.append(Record.model_validate(raw).model_dump())
                except (ValueError, RecursionError) as exc:
                    msg = _validation_message(exc) if isinstance(exc, ValidationError) else str(exc)[:200]
                    raise ValueError(f"{path}, line {n}: not a trace record ({msg})") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: {str(exc)[:200]}") from None
    if not out:
        raise ValueError(f"{path} holds no requests of policy {policy}")
    if not any(finish > start for r in out for _, start, finish, _ in r["chunks"]):
        raise ValueError(f"{path}: the requests of policy {policy} have no chunk time")
    return out
