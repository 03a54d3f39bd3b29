"""The class vLLM mixes into each of its worker processes (``worker_extension_cls``): the
weight sync's loading side and grouped speculation's draft hooks, each in its own module."""
from __future__ import annotations

from umbra.rollout import engine_wait
from umbra.speculative import empty_draft_step
from umbra.speculative.worker_hooks import DraftHooksExtension
from umbra.training.weight_sync import WeightLoadingExtension

# vLLM imports this module in each of its worker processes (``worker_extension_cls``): the one
# place every engine of ours passes through before its first step.
empty_draft_step.apply()
engine_wait.apply()


class WorkerExtension(WeightLoadingExtension, DraftHooksExtension):
    """Methods reached through ``collective_rpc``: ``umbra_load_weights[_file]``,
    ``umbra_update_drafts``, ``umbra_reset_drafts``."""
