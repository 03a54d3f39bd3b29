"""``umbra prepare-model NAME``: build a named model into the model folder once."""
from __future__ import annotations

from pathlib import Path

from umbra.models.registry import NAMED_MODELS, resolve_model


def prepare(name: str, force: bool = False) -> Path:
    """Build named model ``name`` unless its folder is already complete.

    Raises:
        ValueError: ``name`` is not a named model.
    """
    if name not in NAMED_MODELS:
        raise ValueError(f"unknown model '{name}': choose from {', '.join(NAMED_MODELS)}")
    out = resolve_model(name)
    if (out / "config.json").is_file() and (out / "model.safetensors").is_file() and not force:
        return out
    if name == "tiny":
        from umbra.models.tiny import build_tiny_model
        return build_tiny_model(out)
    from umbra.models.smollm2 import prepare_smollm2
    return prepare_smollm2(out)


def model_folder(name: str) -> Path:
    """A bench's ``--model``: a named model's folder (built first if need be), else ``name`` as a path."""
    return prepare(name) if name in NAMED_MODELS else resolve_model(name)
