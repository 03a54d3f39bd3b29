"""Engine side of grouped speculative decoding: feeds the proposer's replica inside each
vLLM worker (mixed into the worker class; called through ``collective_rpc``)."""
from __future__ import annotations


class DraftHooksExtension:
    """Updates and resets the ``GroupedSuffixProposer``'s replica of the group suffix indexes;
    no-ops on an engine without that proposer."""

    def _umbra_replica(self):
        drafter = getattr(self.model_runner, "drafter", None)
        return drafter.replica if drafter is not None and hasattr(drafter, "replica") else None

    def umbra_update_drafts(self, group: int, prompt: list[int], updates: list) -> None:
        """Apply the draft server's new tokens of ``group`` to the replica."""
        replica = self._umbra_replica()
        if replica is not None:
            self.model_runner.drafter.bind(getattr(self.model_runner, "input_batch", None))
            replica.apply(group, prompt, updates)

    def umbra_reset_drafts(self) -> None:
        """Drop every group of the replica (a new rollout reuses group ids)."""
        replica = self._umbra_replica()
        if replica is not None:
            replica.reset()

    def umbra_draft_counters(self) -> dict | None:
        """The proposer's Alg. 1 counters since the last call (``GroupedSuffixProposer.take_counters``),
        or None on an engine without it."""
        drafter = getattr(self.model_runner, "drafter", None)
        return drafter.take_counters() if hasattr(drafter, "take_counters") else None
