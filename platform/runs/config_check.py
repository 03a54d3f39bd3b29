"""One validation of a submitted run config for the form, the API and the CLI's server:
the ``RunConfig`` schema plus the platform's own rule (allowed Ray clusters)."""
from __future__ import annotations

from typing import Any

from django.conf import settings
from pydantic import ValidationError

from umbra.config import RunConfig

CLUSTER_ERROR = ("not an allowed Ray cluster; leave empty for the default "
                 "(operators list others in UMBRA_ALLOWED_CLUSTERS)")


def check_config(values: dict[str, Any]) -> tuple[RunConfig | None, dict[str, list[str]]]:
    """Validate ``values`` (RunConfig fields; missing ones take defaults).

    Returns ``(config, {})`` when valid, else ``(None, {field: [message, ...]})``; the
    field ``"__all__"`` holds errors not tied to one field (e.g. unknown keys are
    reported under their own name).
    """
    errors: dict[str, list[str]] = {}
    cluster = values.get("cluster", "")
    if cluster and cluster not in settings.UMBRA_ALLOWED_CLUSTERS:
        errors.setdefault("cluster", []).append(CLUSTER_ERROR)
    try:
        config = RunConfig.model_validate(values)
    except ValidationError as exc:
        for err in exc.errors():
            field = str(err["loc"][0]) if err["loc"] else "__all__"
            errors.setdefault(field, []).append(err["msg"].removeprefix("Value error, "))
        return None, errors
    return (None, errors) if errors else (config, {})
