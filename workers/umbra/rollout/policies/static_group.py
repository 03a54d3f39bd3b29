"""Group-split baselines: ``static-group`` (capped) and ``verl`` (the peer as it runs)."""
from __future__ import annotations

from collections import deque

from umbra.rollout.policies.base import Dispatch, Policy


class StaticGroupPolicy(Policy):
    """Groups pre-assigned round-robin to instances (group g -> instance g mod n);
    each instance runs its groups' requests whole, in order, to completion."""

    name = "static-group"

    def reset(self, groups, capacities, kv=None) -> None:
        super().reset(groups, capacities, kv)
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

    def on_instance_lost(self, instance: int, in_flight) -> None:
        """The lost instance's groups (running and waiting) are dealt round-robin to the others."""
        waiting = list(self.queues[instance])
        self.queues[instance].clear()
        self.alive = [i for i, c in enumerate(self.capacities) if c > 0 and i != instance]
        self.dealt = 0
        super().on_instance_lost(instance, in_flight)
        for r in waiting:
            self._return(r)

    def _return(self, request) -> None:
        self.queues[self.alive[self.dealt % len(self.alive)]].append(request)
        self.dealt += 1


class VerlPolicy(StaticGroupPolicy):
    """veRL as it runs (the Seer paper's baseline): the iteration's groups split evenly over
    the instances, each instance's whole share submitted to vLLM at once; vLLM's own
    scheduler (its ``max_num_seqs`` and KV budget) admits and, under KV pressure,
    preempts (the preempted request's context is recomputed when it resumes)."""

    name = "verl"
    admission = "engine"
