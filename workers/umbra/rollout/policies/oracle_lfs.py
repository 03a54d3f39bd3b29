"""Longest-first on known lengths: an upper bound for benchmarks and the simulator."""
from __future__ import annotations

from collections import deque

from umbra.rollout.policies.base import Dispatch, Policy


class OracleLFSPolicy(Policy):
    """Whole requests, longest true output first, to the least-loaded instance.

    ``lengths`` maps ``request_id`` to its true output length (e.g. measured by an
    earlier pass with the same seeds); a request missing from it counts as ``max_tokens``.
    """

    name = "oracle-lfs"

    def __init__(self, lengths: dict[str, int] | None = None):
        self.lengths = dict(lengths or {})

    def reset(self, groups, capacities) -> None:
        super().reset(groups, capacities)
        reqs = [r for g in groups for r in g]
        # Stable: equal lengths keep submission order, so the plan is deterministic.
        self.queue = deque(sorted(reqs, key=lambda r: -self.lengths.get(r.request_id, r.max_tokens)))

    def next_dispatches(self) -> list[Dispatch]:
        return self._dispatch_in_order(self.queue)

    def _return(self, request) -> None:
        self.queue.appendleft(request)
