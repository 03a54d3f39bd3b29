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
    global buffer after each chunk. The buffer is ordered by priority but keyed by the
    request's last instance: a free slot on instance ``i`` takes the best of the fresh
    requests and of those whose KV is cached on ``i`` (prefix-cache affinity). Only when
    neither exists does ``i`` take the best request cached elsewhere, from an instance
    running at least ``affinity_spread`` more requests than ``i`` (a migration: the new
    instance re-prefills prompt + generated tokens), so load stays balanced.

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
        self.heaps: dict[int | None, list[tuple]] = {None: []}  # home instance (None: fresh) -> entries
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
            return (0, r.num_generated)  # shortest-generated-first
        est = self.estimate[r.group_id]
        est = r.max_tokens if est is None else est
        if r.num_generated:  # started: its next chunk goes before any new request (no preemption)
            return (1, -max(est, r.num_generated), -r.num_generated)
        return (2, -est)  # new requests longest-estimate-first

    def _home(self, r: Request) -> int | None:
        """The heap ``r`` waits in: its last instance, or the fresh heap when it has none
        or that instance is lost (its KV cache went with it)."""
        last = r.last_instance
        return last if last is not None and self.capacities[last] > 0 else None

    def _push(self, r: Request) -> None:
        self.counter += 1
        self.entry[r.request_id] = self.counter
        heapq.heappush(self.heaps.setdefault(self._home(r), []), (self._key(r), self.counter, r))

    def _enqueue(self, r: Request) -> None:
        self.entered[r.request_id] = self.tick
        self.arrivals.append((self.tick, r))
        self._push(r)

    def _take(self, r: Request) -> Request:
        del self.entered[r.request_id]
        del self.entry[r.request_id]
        return r

    def _top(self, home: int | None) -> tuple | None:
        """Best live entry of ``home``'s heap (stale entries dropped), or None."""
        heap = self.heaps.get(home)
        while heap and self.entry.get(heap[0][2].request_id) != heap[0][1]:
            heapq.heappop(heap)
        return heap[0] if heap else None

    def _pop_for(self, inst: int) -> Request | None:
        """The request a free slot on ``inst`` runs next (see the class doc), or None."""
        # Anti-starvation first: the oldest waiter, if it has waited too long.
        while self.arrivals and self.entered.get(self.arrivals[0][1].request_id) != self.arrivals[0][0]:
            self.arrivals.popleft()  # stale: dispatched since, or re-queued later
        if self.arrivals and self.tick - self.arrivals[0][0] >= self.starvation_limit:
            return self._take(self.arrivals.popleft()[1])
        local = [e for e in (self._top(None), self._top(inst)) if e is not None]
        if not local:  # steal from a busier instance's backlog
            local = [e for h in self.heaps if h is not None and h != inst
                     and self.running[h] - self.running[inst] >= self.affinity_spread
                     for e in (self._top(h),) if e is not None]
        if not local:
            return None
        best = min(local, key=lambda e: (e[0], e[1]))
        r = best[2]
        heapq.heappop(self.heaps[self._home(r)])
        return self._take(r)

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
        end = r.prompt_len + r.num_generated + budget
        return budget - (end - 1) % block

    # -- placement ------------------------------------------------------------
    def next_dispatches(self) -> list[Dispatch]:
        out = []
        blocked: set[int] = set()  # instances with a free slot but nothing they may take
        while self.entered:
            free = [i for i in range(len(self.capacities))
                    if self.running[i] < self.capacities[i] and i not in blocked]
            if not free:
                break
            inst = max(free, key=lambda i: (self.capacities[i] - self.running[i], -i))
            r = self._pop_for(inst)
            if r is None:
                blocked.add(inst)
                continue
            last = self._home(r)
            if last is not None and last != inst:
                if self.running[last] < self.capacities[last] and last not in blocked:
                    inst = last  # a starved request whose own instance has room stays there
                else:
                    self.migrations += 1  # its context is re-prefilled there (measured by the instances)
            self.tick += 1
            out.append(self._start(r, inst, self.chunk_budget(r)))
        return out

    def on_chunk_done(self, request: Request, instance: int) -> None:
        if request.done:
            self._update_estimate(request.group_id, request.num_generated)
        super().on_chunk_done(request, instance)

    def _requeue(self, request: Request) -> None:
        self._enqueue(request)

    def on_instance_lost(self, instance: int, in_flight: list[Request]) -> None:
        """Seer's buffer re-homes the lost instance's waiting requests to the fresh heap
        (their cached KV is gone), then takes back its in-flight chunks."""
        stranded = [e[2] for e in self.heaps.pop(instance, []) if self.entry.get(e[2].request_id) == e[1]]
        super().on_instance_lost(instance, in_flight)  # in-flight ones come back through _requeue
        for r in stranded:
            self._push(r)  # same tick of entry: only its heap changes
