"""One validation of a submitted run config for the form, the API and the CLI's server:
the ``RunConfig`` schema plus the platform's own rule (allowed Ray clusters)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from django.conf import settings
from pydantic import ValidationError

from umbra.config import RunConfig
from umbra.data.registry import NAMED_DATASETS
from umbra.models.registry import NAMED_MODELS
from umbra.rewards.custom import BUILTIN_REWARDS, outside_dirs, resolve_in_dirs

CLUSTER_ERROR = ("not an allowed Ray cluster; leave empty for the default "
                 "(operators list others in UMBRA_ALLOWED_CLUSTERS)")


DATASET_FIELDS = ("dataset", "val_dataset")


def uploads_dir(team: str) -> Path:
    """Where the form keeps ``team``'s uploaded data sets: one folder per team, so that a
    team can name only its own uploads (a path into another team's folder is refused)."""
    return Path(settings.MEDIA_ROOT) / "datasets" / team


def _path_roots(field: str, team: str | None = None) -> list[Path]:
    if field in DATASET_FIELDS:
        return [*([uploads_dir(team)] if team else []), *map(Path, settings.UMBRA_DATA_DIRS)]
    return [Path(settings.UMBRA_MODEL_DIR), *map(Path, settings.UMBRA_MODEL_DIRS)]


def _in_full(field: str, value: Any, team: str | None = None) -> Any:
    """A relative ``model``/``dataset`` path made absolute, as a relative reward file is: looked
    up in the operator's folders first, else from the server's working folder (a worker on
    another machine has another one); stored configs name files in full."""
    named = NAMED_DATASETS if field in DATASET_FIELDS else NAMED_MODELS
    if not isinstance(value, str) or not value or value in named or "\x00" in value or os.path.isabs(value) \
            or ".." in Path(value).parts:  # refused by check_config, never probed (whether a file exists)
        return value
    try:
        for root in _path_roots(field, team):
            if (root / value).exists():
                return str(root / value)
        return str(Path(value).absolute())
    except (OSError, ValueError):
        return value


def _outside_roots(field: str, value: Any, shown: Any = None, team: str | None = None) -> str | None:
    """Why a ``model``/``dataset`` path may not be used, or None. Paths must lie under
    the operator's folders: otherwise members could make the server open (and report on)
    any file it can read."""
    named = NAMED_DATASETS if field in DATASET_FIELDS else NAMED_MODELS
    if not isinstance(value, str) or not value or value in named:
        return None
    roots = _path_roots(field, team)
    try:
        resolved = Path(value).resolve()
    except (OSError, ValueError):
        resolved = None
    if resolved is not None and any(resolved.is_relative_to(r.resolve()) for r in roots):
        return None
    env = "UMBRA_DATA_DIRS" if field in DATASET_FIELDS else "UMBRA_MODEL_DIRS"
    shown = shown if isinstance(shown, str) else value  # what the user wrote, not where we looked
    return (f"unknown {field} '{shown[:200]}': use {' or '.join(repr(n) for n in named)}, or a path under "
            f"{', '.join(map(str, roots))} (operators add folders with {env})")


SURROGATE_ERROR = "holds a lone surrogate (a \\ud800-\\udfff escape), which is not Unicode text"


def _has_surrogate(text: str) -> bool:
    return any("\ud800" <= c <= "\udfff" for c in text)


def _without_surrogates(values: dict[str, Any], errors: dict[str, list[str]]) -> dict[str, Any]:
    """``values`` less the keys and strings holding a lone surrogate (JSON's ``"\\ud800"``), each
    refused in ``errors`` (the key escaped): messages that quote such a value could not be
    written as UTF-8, so a page or a 400 showing them would fail."""
    bad = [k for k, v in values.items()
           if _has_surrogate(str(k)) or (isinstance(v, str) and _has_surrogate(v))]
    for k in bad:
        field = str(k).encode("ascii", "backslashreplace").decode() if _has_surrogate(str(k)) else k
        errors.setdefault(field, []).append(SURROGATE_ERROR)
    return {k: v for k, v in values.items() if k not in bad}


def check_config(values: dict[str, Any], strict: bool = False,
                 team: str | None = None) -> tuple[RunConfig | None, dict[str, list[str]]]:
    """Validate ``values`` (RunConfig fields; missing ones take defaults) for a run of
    ``team`` (its slug: data set paths may lie in its uploads folder; None: in none).

    ``strict``: types must match exactly (JSON from the API: ``"5"`` is not an integer);
    form fields arrive as text and are converted. Returns ``(config, {})`` when valid,
    else ``(None, {field: [message, ...]})``; the field ``"__all__"`` holds errors not
    tied to one field (unknown keys are reported under their own name).
    """
    errors: dict[str, list[str]] = {}
    values = _without_surrogates(values, errors)
    cluster = values.get("cluster", "")
    if cluster and cluster not in settings.UMBRA_ALLOWED_CLUSTERS:
        errors.setdefault("cluster", []).append(CLUSTER_ERROR)
    for field in (*DATASET_FIELDS, "model"):
        value = values.get(field)
        if isinstance(value, str) and not os.path.isabs(value) and ".." in Path(value).parts:
            reason = f"a relative {field} path may not contain '..': name it from its folder, or in full"
        else:
            if field in values:
                values = {**values, field: _in_full(field, value, team)}
            reason = _outside_roots(field, values.get(field), shown=value, team=team)
        if reason:
            errors.setdefault(field, []).append(reason)
            values = {**values, field: RunConfig.model_fields[field].default}  # never opened
    reward = values.get("reward")
    if isinstance(reward, str) and reward and reward not in BUILTIN_REWARDS:
        try:  # a relative file is looked up in the reward folders; the stored config names it in full
            reward = resolve_in_dirs(reward, settings.UMBRA_REWARD_DIRS)
            reason = outside_dirs(reward, settings.UMBRA_REWARD_DIRS)
        except ValueError as exc:
            reward, reason = None, str(exc)
        if reason:  # never opened
            errors.setdefault("reward", []).append(reason)
            values = {**values, "reward": RunConfig.model_fields["reward"].default}
        else:
            values = {**values, "reward": reward}
    try:
        config = RunConfig.model_validate(values, strict=strict)
    except ValidationError as exc:
        for err in exc.errors():
            field = str(err["loc"][0]) if err["loc"] else "__all__"
            errors.setdefault(field, []).append(err["msg"].removeprefix("Value error, "))
        return None, errors
    return (None, errors) if errors else (config, {})
