"""Per-instance concurrency caps from the KV budget, so that vLLM never preempts."""
from __future__ import annotations

import json
from pathlib import Path

KV_DTYPE_BYTES = 4  # the CPU engines run float32
HEADROOM = 0.9      # leave room for block rounding inside the engine


def kv_bytes_per_token(model_path: str | Path) -> int:
    """Bytes of K and V cache per token for the model at ``model_path`` (reads config.json).

    Raises FileNotFoundError / KeyError for a folder without a usable config.
    """
    cfg = json.loads((Path(model_path) / "config.json").read_text())
    heads = cfg["num_attention_heads"]
    kv_heads = cfg.get("num_key_value_heads") or heads
    head_dim = cfg.get("head_dim") or cfg["hidden_size"] // heads
    return 2 * cfg["num_hidden_layers"] * kv_heads * head_dim * KV_DTYPE_BYTES


def concurrency_cap(model_path: str | Path, kv_cache_gib: int, max_seq_tokens: int, max_num_seqs: int) -> int:
    """Most requests an instance may run at once: each may grow to ``max_seq_tokens``
    (prompt + max generated), and all must fit in ``kv_cache_gib`` GiB; at least 1."""
    kv_tokens = int(kv_cache_gib * 2**30 * HEADROOM) // kv_bytes_per_token(model_path)
    return max(1, min(max_num_seqs, kv_tokens // max(1, max_seq_tokens)))
