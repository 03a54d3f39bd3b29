"""The veRL-style baseline."""
from __future__ import annotations

from collections import deque

from umbra.rollout.policies.base import Dispatch, Policy


class StaticGroupPolicy(Policy):
    """Groups pre-assigned round-robin to instances (group g -> instance g mod n);
    each instance runs its groups' requests whole, in order, to completion."""

    name = "static-group"

    def reset(self, groups, capacities) -> None:
        super().reset(groups, capacities)
        self.queues = [deque() for _ in capacities]
        for g, group in enumerate(groups):
            self.queues[g % len(capacities)].extend(group)

    def next_dispatches(self) -> list[Dispatch]:
        out = []
        for i, queue in enumerate(self.queues):
            while queue and self.running[i] < self.capacities[i]:
                req = queue.popleft()
                out.append(self._start(req, i, req.remaining))
        return out
