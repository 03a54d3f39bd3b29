"""Request-level load balancing without chunking."""
from __future__ import annotations

from collections import deque

from umbra.rollout.policies.base import Dispatch, Policy


class RequestLBPolicy(Policy):
    """Requests in submission order, each sent whole to the instance with the most
    free slots (fewest in-flight requests) when it has room."""

    name = "request-lb"

    def reset(self, groups, capacities, kv=None) -> None:
        super().reset(groups, capacities, kv)
        self.queue = deque(r for g in groups for r in g)

    def next_dispatches(self) -> list[Dispatch]:
        return self._dispatch_in_order(self.queue)

    def _return(self, request) -> None:
        self.queue.appendleft(request)  # it was started first: it goes first again
