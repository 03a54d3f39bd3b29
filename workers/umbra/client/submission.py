"""Reading a run submission from YAML and checking it locally against ``RunConfig``.

The file holds ``RunConfig`` fields at the top level plus optional ``team`` and
``experiment`` keys::

    team: alpha
    experiment: gsm8k-seer
    model: tiny
    rollout_policy: seer
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import yaml

from umbra.client.errors import UsageError
from umbra.config_yaml import MAX_YAML_BYTES, ConfigLoader

SUBMISSION_KEYS = ("team", "experiment")


@dataclass(frozen=True)
class Submission:
    """What ``POST /api/runs/`` needs: team slug and experiment name (None when the
    file and the flags give none) and the config fields as written."""

    team: str | None
    experiment: str | None
    config: dict = field(default_factory=dict)


def _name(value, key: str, path: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, (str, int)) or isinstance(value, bool) or not str(value).strip():
        raise UsageError(f"{path}: `{key}` must be a non-empty name")
    return str(value).strip()


def _read_text(path: str) -> str:
    """The text of the file ``path``: a regular file (not a directory, FIFO or device such as
    /dev/zero) of at most MAX_YAML_BYTES of UTF-8; raises UsageError saying which it is not."""
    p = Path(path)
    try:
        if not p.is_file():  # follows a symlink; a FIFO would block the read, /dev/zero never ends
            raise UsageError(f"{path}: no such file" if not p.exists() else f"{path}: not a regular file")
        with p.open("rb") as f:
            raw = f.read(MAX_YAML_BYTES + 1)
    except OSError as exc:
        raise UsageError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if len(raw) > MAX_YAML_BYTES:
        raise UsageError(f"{path}: longer than {MAX_YAML_BYTES // 1024} KiB: not a run config")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: not UTF-8 text (byte {exc.start + 1})") from None


def load_submission(path: str, team: str | None = None, experiment: str | None = None) -> Submission:
    """Read ``path`` into a :class:`Submission`; ``team``/``experiment`` (the flags)
    win over the file's keys.

    Raises:
        UsageError: the file is missing, not a regular file, unreadable, longer than
            MAX_YAML_BYTES, not UTF-8, not YAML, or not a mapping.
    """
    text = _read_text(path)
    try:
        data = yaml.load(text, Loader=ConfigLoader)  # a SafeLoader: no Python objects
    except RecursionError:
        raise UsageError(f"{path}: invalid YAML: nested too deeply") from None
    except (ValueError, OverflowError) as exc:  # an integer of 5,000 digits
        raise UsageError(f"{path}: invalid YAML: {str(exc)[:120] or type(exc).__name__}") from None
    except yaml.reader.ReaderError as exc:  # NUL or another character YAML does not allow
        char = f"U+{exc.character:04X}" if isinstance(exc.character, int) else repr(exc.character)
        raise UsageError(f"{path}: invalid YAML (character {exc.position + 1}): {char} is not allowed in YAML") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise UsageError(f"{path}: invalid YAML{where}: {problem}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise UsageError(f"{path}: expected a mapping of RunConfig fields, got {type(data).__name__}")
    data = {str(k): v for k, v in data.items()}
    for key, value in data.items():  # a run config holds plain scalars only (no !!binary, dates, lists)
        if not (value is None or isinstance(value, (str, int, float, bool))):
            raise UsageError(f"{path}: {key}: expected a number, string or true/false, got {type(value).__name__}")
    file_team = _name(data.pop("team", None), "team", path)
    file_experiment = _name(data.pop("experiment", None), "experiment", path)
    return Submission(team=team or file_team, experiment=experiment or file_experiment, config=data)


# Fields whose values may name files on the platform's machines (relative ones in its
# operator's folders, e.g. a save_to_disk folder or a model folder by its bare name): whether
# such a value is valid only the server can say.
SERVER_JUDGED = ("model", "dataset", "val_dataset", "reward")


def _server_judges(field: str, config: dict) -> bool:
    """Whether an error about ``field`` is the server's to report (see SERVER_JUDGED);
    ``val_fraction`` reads the training file, which is the server's unless generated."""
    if field == "val_fraction":
        from umbra.data.registry import NAMED_DATASETS

        return config.get("dataset", "arith") not in NAMED_DATASETS
    return field in SERVER_JUDGED and isinstance(config.get(field), str)


def local_errors(config: dict) -> list[tuple[str, str]]:
    """Check ``config`` with ``umbra.config.RunConfig``; returns ``(field, message)``
    pairs, empty when valid.

    ``model``, ``dataset``, ``val_dataset`` and ``reward`` values may name files on the
    platform's machines (relative ones in its operator's folders), not this one: errors about
    them (and about ``val_fraction`` of a data file) are left for the server to judge.
    """
    from pydantic import ValidationError

    from umbra.config import RunConfig

    try:  # strict, as the server checks: YAML gives typed values like JSON ("5" is not an integer)
        RunConfig.model_validate(config, strict=True)
    except ValidationError as exc:
        out = []
        for err in exc.errors():
            loc = ".".join(str(part) for part in err["loc"]) or "config"
            top = str(err["loc"][0]) if err["loc"] else ""
            if err["type"] == "value_error" and _server_judges(top, config):
                continue
            msg = err["msg"].removeprefix("Value error, ")
            out.append((loc, msg))
        return out
    return []
