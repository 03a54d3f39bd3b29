"""Run configs at and just past every bound of ``RunConfig``, derived from its field
metadata, so that a new field (or a changed bound) is tested without editing this file.

Per numeric field: its minimum and maximum are accepted, one step below the minimum and one
above the maximum are refused; wrong types are refused; per ``Literal`` field a value outside
it is refused. Cross-field bounds: prompts x group size, max_tokens vs the model's context.
``tests/unit/test_config_bounds.py`` runs them through the check every door shares;
``tests/platform/test_config_doors.py`` shows that each door uses that check."""
from __future__ import annotations

import math
import typing

import annotated_types as at

from umbra.config import MAX_REQUESTS, PROMPT_BUDGET, RunConfig
from umbra.models.registry import NAMED_MODELS

# A small valid config: every field's extreme must fit beside it (prompts x group <= MAX_REQUESTS).
BASE = {"model": "tiny", "dataset": "arith", "prompts_per_iteration": 4, "group_size": 2, "max_tokens": 32,
        "iterations": 2, "val_fraction": 0.25}  # a validation set, so that any val_every is accepted
# Caps that other fields of BASE put on a field below its own maximum.
EFFECTIVE_MAX = {"max_tokens": NAMED_MODELS[BASE["model"]] - PROMPT_BUDGET}
FIELDS = RunConfig.model_fields
NUMERIC = [n for n, f in FIELDS.items() if f.annotation in (int, float)]
FLOATS = [n for n in NUMERIC if FIELDS[n].annotation is float]
LITERAL = [n for n, f in FIELDS.items() if typing.get_origin(f.annotation) is typing.Literal]
BOOLEAN = [n for n, f in FIELDS.items() if f.annotation is bool]
TEXT = [n for n, f in FIELDS.items() if f.annotation is str]


def limits(name: str) -> tuple[float, float, float, float]:
    """``(lowest accepted, highest accepted, highest refused below, lowest refused above)``
    from the field's ge/gt/le/lt; floats step by one ulp, integers by one."""
    info = FIELDS[name]
    is_int = info.annotation is int
    step_up = (lambda v: v + 1) if is_int else (lambda v: math.nextafter(v, math.inf))
    step_down = (lambda v: v - 1) if is_int else (lambda v: math.nextafter(v, -math.inf))
    lo = hi = below = above = None
    for m in info.metadata:
        if isinstance(m, at.Ge):
            lo, below = m.ge, step_down(m.ge)
        elif isinstance(m, at.Gt):
            lo, below = step_up(m.gt), m.gt
        elif isinstance(m, at.Le):
            hi, above = m.le, step_up(m.le)
        elif isinstance(m, at.Lt):
            hi, above = step_down(m.lt), m.lt
    assert None not in (lo, hi), f"RunConfig.{name} needs both bounds (a config must be bounded)"
    return lo, min(hi, EFFECTIVE_MAX.get(name, hi)), below, above


def wrong_types(name: str) -> list:
    """JSON-typed values of the wrong type for ``name`` (YAML gives the same types)."""
    ann = FIELDS[name].annotation
    if ann is int:
        return ["5", 1.5, 2.0, True, None, [1], {"v": 1}]
    if ann is float:
        return ["0.5", True, None, [0.5]]
    if ann is bool:
        return ["true", 1, None]
    return [5, True, ["x"]]  # str and Literal


# (field, value): accepted by every door.
ACCEPTED = [(n, v) for n in NUMERIC for v in sorted(set(limits(n)[:2]))] + \
           [(n, v) for n in LITERAL for v in typing.get_args(FIELDS[n].annotation)] + \
           [(n, v) for n in BOOLEAN for v in (True, False)]
# (field, typed value, words of the error): refused by the API and the CLI (JSON and YAML types).
REFUSED = [(n, limits(n)[2], "greater than") for n in NUMERIC] + \
          [(n, limits(n)[3], "less than") for n in NUMERIC] + \
          [(n, v, "Input should be") for n in NUMERIC + BOOLEAN + LITERAL + TEXT for v in wrong_types(n)] + \
          [(n, v, "Input should be") for n in LITERAL for v in ("fastest", "", "SEER", "oracle-lfs")] + \
          [(n, "x" * (FIELDS[n].metadata[0].max_length + 1), "") for n in TEXT]
# (field, text, words of the error): what a form field may hold that no schema type reads:
# past the bounds, not numbers, not choices, too long.
FORM_REFUSED = [(n, v, "greater than") for n in NUMERIC for v in [limits(n)[2]]] + \
               [(n, v, "less than") for n in NUMERIC for v in [limits(n)[3]]] + \
               [(n, v, "valid number" if FIELDS[n].annotation is float else "valid integer")
                for n in NUMERIC for v in (["abc", "1.5", "0x10", "1e3"] if FIELDS[n].annotation is int else ["hot", "1,5"])] + \
               [(n, "1" * 501, "at most 500 characters") for n in NUMERIC[:1]] + \
               [(n, v, "valid choice") for n in LITERAL for v in ("fastest", "SEER")] + \
               [(n, "x" * (FIELDS[n].metadata[0].max_length + 1), "") for n in TEXT]
NON_FINITE_TEXT = ["nan", "inf", "-inf", "1e400"]
# Cross-field: the largest per-iteration request count and each model's context.
PROMPTS_MAX = limits("prompts_per_iteration")[1]
CROSS_ACCEPTED = [{"prompts_per_iteration": PROMPTS_MAX, "group_size": MAX_REQUESTS // PROMPTS_MAX}] + \
                 [{"model": m, "max_tokens": ctx - PROMPT_BUDGET} for m, ctx in NAMED_MODELS.items()]
CROSS_REFUSED = [({"prompts_per_iteration": PROMPTS_MAX, "group_size": MAX_REQUESTS // PROMPTS_MAX + 1},
                  "group_size", f"at most {MAX_REQUESTS}")] + \
                [({"model": m, "max_tokens": ctx - PROMPT_BUDGET + 1}, "max_tokens", f"exceeds what model '{m}'")
                 for m, ctx in NAMED_MODELS.items()] + \
                [({"val_dataset": "arith", "val_fraction": 0.1}, "val_fraction", "not both"),
                 ({"val_fraction": 0.0, "val_every": 1}, "val_every", "needs a validation set")]


def form_value(value) -> str:
    """How a browser sends ``value`` in a form field."""
    return repr(value) if isinstance(value, float) else str(value)


def form_data(config: dict) -> dict:
    """The run form's POST data for ``config`` (checkboxes: absent means False)."""
    data = {"experiment": "bounds", **{k: form_value(v) for k, v in config.items() if not isinstance(v, bool)}}
    data.update({k: "on" for k, v in config.items() if v is True})
    return data
