"""A run config as YAML (ours): read a pasted or uploaded mapping of RunConfig fields
(``umbra.config_yaml.ConfigLoader``, the CLI's too) with a message for anything that is not one, and write one."""
from __future__ import annotations

from typing import Any

import yaml

from umbra.config_yaml import MAX_YAML_BYTES, ConfigLoader

__all__ = ["MAX_YAML_BYTES", "ConfigYamlError", "config_to_yaml", "parse_config_yaml"]


class ConfigYamlError(ValueError):
    """The text is not a YAML mapping of run-config fields; the message says why."""


def parse_config_yaml(text: str | bytes, known: set[str]) -> dict[str, Any]:
    """The ``{field: value}`` mapping in ``text``; keys must be in ``known``.

    Raises ConfigYamlError (never a yaml exception) for text that is too long, not
    UTF-8, not YAML, not a mapping, has unknown keys or nested values.
    """
    if isinstance(text, bytes):
        if len(text) > MAX_YAML_BYTES:
            raise ConfigYamlError(f"YAML is longer than {MAX_YAML_BYTES:,} bytes")
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            raise ConfigYamlError("YAML file is not UTF-8 text") from None
    if len(text.encode("utf-8")) > MAX_YAML_BYTES:
        raise ConfigYamlError(f"YAML is longer than {MAX_YAML_BYTES:,} bytes")
    try:
        data = yaml.load(text, Loader=ConfigLoader)  # noqa: S506 -- a SafeLoader
    except (ValueError, RecursionError, OverflowError) as exc:  # an integer of 5,000 digits, nesting too deep
        raise ConfigYamlError(f"YAML could not be read: {str(exc)[:120] or type(exc).__name__}") from None
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f" (line {where.line + 1}, column {where.column + 1})" if where is not None else ""
        problem = getattr(exc, "problem", None) or "not valid YAML"
        raise ConfigYamlError(f"YAML could not be read{at}: {problem}") from None
    if data is None:
        raise ConfigYamlError("YAML is empty: give a mapping such as 'model: tiny'")
    if not isinstance(data, dict):
        raise ConfigYamlError(f"YAML must be a mapping of config fields (key: value), not a {type(data).__name__}")
    unknown = [str(k) for k in data if k not in known]
    if unknown:
        raise ConfigYamlError(f"unknown config field{'s' if len(unknown) > 1 else ''} in YAML: "
                              f"{', '.join(unknown[:10])}")
    nested = [k for k, v in data.items() if isinstance(v, (dict, list))]
    if nested:
        raise ConfigYamlError(f"field {nested[0]} in YAML must be a single value, not a {type(data[nested[0]]).__name__}")
    return data


def config_to_yaml(config: dict[str, Any]) -> str:
    """``config`` as YAML, keys in the given order."""
    return yaml.safe_dump(dict(config), sort_keys=False, default_flow_style=False, allow_unicode=True)
