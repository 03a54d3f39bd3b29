"""Loaded inside each vLLM worker process (``worker_extension_cls``).

Weights arrive as safetensors bytes: a raw state dict sent through
``collective_rpc`` arrives mangled on the CPU build.
"""
from __future__ import annotations

import hashlib


class WeightSyncExtension:
    """Mixed into vLLM's worker class; methods are called via ``collective_rpc``."""

    def umbra_load_weights(self, blob: bytes) -> str:
        """Load a safetensors-serialized state dict in place; return its sha256."""
        from safetensors.torch import load

        tensors = load(blob)
        self.reload_weights(weights_iterator=iter(tensors.items()))
        return hashlib.sha256(blob).hexdigest()
