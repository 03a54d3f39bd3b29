"""The policy as a Hugging Face model folder (ours): what a checkpoint exports, loadable by
``transformers.AutoModelForCausalLM.from_pretrained`` and served by vLLM as is."""
from __future__ import annotations

from pathlib import Path

HF_FOLDER = "hf"  # inside each checkpoint folder


def save_hf_folder(model, state: dict, model_path: str, folder: str | Path) -> Path:
    """Write ``config.json``, ``generation_config.json``, ``model.safetensors`` (``state``:
    the full, unsharded weights) and the tokenizer of ``model_path`` into ``folder``;
    returns it. ``model`` supplies the config and the tied-weight layout."""
    from transformers import AutoTokenizer

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder, state_dict=state, safe_serialization=True)
    AutoTokenizer.from_pretrained(model_path).save_pretrained(folder)
    return folder
