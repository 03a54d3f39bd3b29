"""Seer's rollout policy: divided rollout + context-aware scheduling (Seer §3-4, Alg. 2).

Each switch can be turned off for ablations: ``divided=False`` runs requests whole,
``context_aware=False`` dispatches in first-in-first-out order.
"""
from __future__ import annotations

import heapq
from collections import deque

from umbra.rollout.policies.base import Dispatch, Policy
from umbra.rollout.request import Request


class SeerPolicy(Policy):
    """Divided rollout with context-aware scheduling.

    Divided rollout: a request runs ``chunk_tokens`` at a time
    (``max_tokens = min(chunk_tokens, original_max - generated)``) and returns to the
    global buffer after each chunk; its next chunk stays on its last instance (prefix
    cache affinity) while that instance's in-flight count is within
    ``affinity_spread`` of the least loaded one, else it moves to the least loaded
    instance (a migration: the new instance re-prefills prompt + generated tokens).

    Context-aware scheduling (Alg. 2): the first request of each group is its
    speculative request, kept on a high-priority queue served shortest-generated-first;
    a group's length estimate is the longest completed response so far (unknown =
    ``max_tokens``); the other requests go longest-estimate-first. Anti-starvation: a
    request that has waited ``starvation_limit`` dispatches is served next.
    """

    name = "seer"

    def __init__(self, chunk_tokens: int = 64, divided: bool = True, context_aware: bool = True,
                 affinity_spread: int = 1, starvation_limit: int = 10_000, kv_block_tokens: int = 1):
        if chunk_tokens < 1:
            raise ValueError("chunk_tokens must be >= 1")
        if kv_block_tokens < 1:
            raise ValueError("kv_block_tokens must be >= 1")
        self.kv_block_tokens = kv_block_tokens
        self.chunk_tokens = chunk_tokens
        self.chunked = divided
        self.context_aware = context_aware
        self.affinity_spread = affinity_spread
        self.starvation_limit = starvation_limit

    def reset(self, groups, capacities) -> None:
        super().reset(groups, capacities)
        self.estimate: dict[int, int | None] = {g[0].group_id: None for g in groups if g}
        self.speculative = {g[0].request_id for g in groups if g} if self.context_aware else set()
        self.members = {g[0].group_id: g for g in groups if g}
        self.migrations = 0
        self.tick = 0      # dispatches so far (the anti-starvation clock)
        self.counter = 0   # heap entry serial: FIFO among equal keys, marks stale entries
        self.heap: list[tuple] = []
        self.arrivals: deque[tuple[int, Request]] = deque()
        self.entered: dict[str, int] = {}  # waiting request_id -> tick it (re)entered the buffer
        self.entry: dict[str, int] = {}    # waiting request_id -> serial of its live heap entry
        for g in groups:
            for r in g:
                self._enqueue(r)

    # -- buffer ---------------------------------------------------------------
    def _key(self, r: Request) -> tuple:
        if not self.context_aware:
            return (0,)
        if r.request_id in self.speculative:
            return (0, len(r.output_token_ids))  # shortest-generated-first
        est = self.estimate[r.group_id]
        est = r.max_tokens if est is None else est
        return (1, -est, -len(r.output_token_ids))  # longest estimate first

    def _push(self, r: Request) -> None:
        self.counter += 1
        self.entry[r.request_id] = self.counter
        heapq.heappush(self.heap, (self._key(r), self.counter, r))

    def _enqueue(self, r: Request) -> None:
        self.entered[r.request_id] = self.tick
        self.arrivals.append((self.tick, r))
        self._push(r)

    def _take(self, r: Request) -> Request:
        del self.entered[r.request_id]
        del self.entry[r.request_id]
        return r

    def _pop(self) -> Request | None:
        # Anti-starvation first: the oldest waiter, if it has waited too long.
        while self.arrivals and self.entered.get(self.arrivals[0][1].request_id) != self.arrivals[0][0]:
            self.arrivals.popleft()  # stale: dispatched since, or re-queued later
        if self.arrivals and self.tick - self.arrivals[0][0] >= self.starvation_limit:
            return self._take(self.arrivals.popleft()[1])
        while self.heap:
            _, serial, r = heapq.heappop(self.heap)
            if self.entry.get(r.request_id) == serial:
                return self._take(r)
        return None

    def _update_estimate(self, group_id: int, length: int) -> None:
        """A response of the group completed: raise its estimate and re-key its waiters."""
        old = self.estimate[group_id]
        if old is not None and old >= length:
            return
        self.estimate[group_id] = length
        if self.context_aware:
            for r in self.members[group_id]:
                if r.request_id in self.entry:
                    self._push(r)  # the old entry becomes stale

    def chunk_budget(self, r: Request) -> int:
        """``max_tokens`` of ``r``'s next chunk: ``min(chunk_tokens, remaining)``, shortened
        by less than one KV block so that the context after it is ``1 (mod block)`` tokens
        long. vLLM serves a prefix-cache hit in whole blocks and always computes the last
        context token, so such a context re-prefills 1 token, any other up to a block."""
        if not self.chunked:
            return r.remaining
        budget = min(self.chunk_tokens, r.remaining)
        block = self.kv_block_tokens
        if budget == r.remaining or block == 1 or self.chunk_tokens < block:
            return budget
        end = len(r.prompt_token_ids) + len(r.output_token_ids) + budget
        return budget - (end - 1) % block

    # -- placement ------------------------------------------------------------
    def _place(self, r: Request) -> int:
        least = self.least_loaded()
        last = r.last_instance
        if (last is not None and self.running[last] < self.capacities[last]
                and self.running[last] - self.running[least] <= self.affinity_spread):
            return last
        if last is not None and least != last:
            self.migrations += 1  # its context is re-prefilled there (measured by the instances)
        return least

    def next_dispatches(self) -> list[Dispatch]:
        out = []
        while self.entered and self.least_loaded() is not None:
            r = self._pop()
            if r is None:
                break
            self.tick += 1
            out.append(self._start(r, self._place(r), self.chunk_budget(r)))
        return out

    def on_chunk_done(self, request: Request, instance: int) -> None:
        if request.done:
            self._update_estimate(request.group_id, len(request.output_token_ids))
        super().on_chunk_done(request, instance)

    def _requeue(self, request: Request) -> None:
        self._enqueue(request)
