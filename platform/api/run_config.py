"""The ``config`` of a run submission in the schema: the ``RunConfig`` model's own JSON
schema (types, bounds, choices, no unknown keys), written for OpenAPI 3.0."""
from __future__ import annotations

from umbra.config import RunConfig

from api import text

_RULES = (" Beyond the bounds below, the server checks what depends on its state and on other fields"
          " (400 naming the field): `model` and `dataset` name a built-in one or a path under the"
          " operator's folders; `max_tokens` fits the model's context less 512 prompt tokens;"
          " prompts_per_iteration x group_size is at most 16384; a non-empty `cluster` is one the"
          " operator allows. Missing fields take their defaults; types are strict.")


def _openapi_30(schema: dict) -> dict:
    """Pydantic writes JSON Schema 2020-12: OpenAPI 3.0 spells exclusive bounds as booleans."""
    out = {k: v for k, v in schema.items() if k != "title"}
    for bound, plain in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        if isinstance(out.get(bound), (int, float)) and not isinstance(out[bound], bool):
            out[plain], out[bound] = out[bound], True
    if out.get("type") == "string" and "enum" not in out:
        out["pattern"] = text.pattern(text.NUL, non_blank=False)
    return out


def run_config_schema() -> dict:
    schema = RunConfig.model_json_schema()
    return {"type": "object", "additionalProperties": False,
            "description": " ".join(schema["description"].split()) + _RULES,
            "properties": {name: _openapi_30(field) for name, field in schema["properties"].items()}}
