"""Resolve a run config's ``model`` field to a folder and its context length.

Named models live under ``$UMBRA_MODEL_DIR`` (default ``$UMBRA_VAR_DIR/models``, else ``<repo>/var/models``)
and are built at set-up by ``umbra prepare-model NAME``; nothing is downloaded.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from umbra.paths import is_file

# Context lengths of the named models, known without preparing them.
NAMED_MODELS: dict[str, int] = {"tiny": 1024, "smollm2": 8192}


def model_dir() -> Path:
    """Folder that holds prepared named models: ``$UMBRA_MODEL_DIR``, else ``$UMBRA_VAR_DIR/models``
    (where the platform's settings look), else ``<repo>/var/models``."""
    var = Path(os.environ.get("UMBRA_VAR_DIR") or Path(__file__).resolve().parents[3] / "var")
    return Path(os.environ.get("UMBRA_MODEL_DIR") or var / "models")


def resolve_model(name: str) -> Path:
    """Path of the model folder for ``name`` (a named model or a path)."""
    if name in NAMED_MODELS:
        return model_dir() / name
    return Path(name)


def context_length(name: str) -> int:
    """Max positions of model ``name``.

    Raises:
        ValueError: unknown name, or a path without a readable ``config.json``.
    """
    if name in NAMED_MODELS:
        return NAMED_MODELS[name]
    cfg = Path(name) / "config.json"
    if not name or not is_file(str(cfg)):
        raise ValueError(f"unknown model '{name[:200]}': use {', '.join(NAMED_MODELS)} or a folder with config.json")
    try:
        data = json.loads(cfg.read_text())
        ctx = int(data.get("max_position_embeddings") or data["max_seq_len"])
    except Exception as exc:  # any malformed config.json is the user's input, not our crash
        raise ValueError(f"model '{name}': config.json has no usable context length ({type(exc).__name__})") from None
    if not 0 < ctx <= 10_000_000:
        raise ValueError(f"model '{name}': context length {ctx} is out of range")
    return ctx
