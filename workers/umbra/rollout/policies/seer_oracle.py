"""Seer's machinery ranked by true lengths: the paper's oracle for context-aware scheduling."""
from __future__ import annotations

from umbra.rollout.policies.seer import SeerPolicy
from umbra.rollout.request import Request


class SeerOraclePolicy(SeerPolicy):
    """Divided rollout, KV ledger and reserve exactly as :class:`SeerPolicy`, but every
    decision ranks by each request's true output length, longest first, instead of Alg. 2's
    group estimates: the oracle of Seer §3.3 ("true lengths, longest first"; Qwen2-VL-72B:
    1.63x veRL against context-aware's 1.56x), which runs on Seer's own infrastructure.
    ``oracle-lfs`` runs whole requests on vLLM's scheduler instead. Like it, this is a
    reference, not a strict bound: longest first is a heuristic even on exact lengths (on
    very spread lengths, e.g. lognormal sigma 1.8, Alg. 2 has beaten it by 10%).

    ``lengths`` maps ``request_id`` to its true output length (a missing one counts as
    ``max_tokens``). No probes: the lengths are known. The reserve (``growth_reserve``)
    counts each resident's growth to its true length. ``oracle-divided-evict`` also lets a
    new request give up the KV of parked ones ranked below it (``fresh_evicts``; the paper's
    oracle, on a global KV pool, is never held out by parked KV): it pays where re-prefill is
    cheap (qwen2-vl-72b, 1.168x -> 1.206x ``verl``, tail 0.51x -> 0.29x) and not on this CPU's
    step model (lognormal, step-w2c: 1.030-1.039x -> 1.020-1.030x divided rollout).
    Simulator only: a chunked rollout on real engines samples each chunk afresh, so no
    earlier pass knows its lengths.
    """

    name = "seer-oracle"

    def __init__(self, lengths: dict[str, int] | None = None, **options):
        self.lengths = dict(lengths or {})
        super().__init__(**options)

    def reset(self, groups, capacities, kv=None) -> None:
        super().reset(groups, capacities, kv)
        self.speculative = set()  # no probes: the lengths are known

    def _length(self, r: Request) -> int:
        return min(r.max_tokens, self.lengths.get(r.request_id, r.max_tokens))

    def _final_estimate(self, r: Request) -> int:
        return max(self._length(r), r.num_generated + 1)

    def _key(self, r: Request) -> tuple:
        # longest first; among equals a started request before a new one (as SeerPolicy)
        return (1, -max(self._length(r), r.num_generated), 0 if r.num_generated else 1)
