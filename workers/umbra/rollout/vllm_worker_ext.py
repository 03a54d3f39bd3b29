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

    def umbra_load_weights_file(self, path: str) -> str:
        """Load weights from a safetensors file on this node, tensor by tensor (memory-mapped)."""
        from safetensors import safe_open

        with safe_open(path, framework="pt") as f:
            self.reload_weights(weights_iterator=((k, f.get_tensor(k)) for k in f.keys()))
        return path

    def umbra_update_drafts(self, group: int, prompt: list[int], updates: list) -> None:
        """Feed the grouped-speculation proposer's replica (no-op without speculation)."""
        drafter = getattr(self.model_runner, "drafter", None)
        if drafter is not None and hasattr(drafter, "replica"):
            drafter.replica.apply(group, prompt, updates)

    def umbra_reset_drafts(self) -> None:
        """Drop every group of the replica (a new rollout reuses group ids)."""
        drafter = getattr(self.model_runner, "drafter", None)
        if drafter is not None and hasattr(drafter, "replica"):
            drafter.replica.reset()
