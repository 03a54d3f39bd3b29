"""Longest-first on known lengths: an upper bound for benchmarks and the simulator."""
from __future__ import annotations

from collections import deque

from umbra.rollout.policies.base import Dispatch, Policy


class OracleLFSPolicy(Policy):
    """Whole requests, longest true output first.

    ``lengths`` maps ``request_id`` to its true output length (e.g. measured by an
    earlier pass with the same seeds); a request missing from it counts as ``max_tokens``.
    ``engine=True`` (the default, ours): every request is submitted at once in that order,
    each to the instance with the fewest true tokens assigned so far (LPT, longest processing
    time first), and the engines admit them in that order (preempting, if at all, the
    newest = shortest). ``engine=False``: given a KV budget, a request starts only where its
    prompt plus its true length fits (so nothing is ever preempted, but KV is held for tokens
    not yet generated); without one, the least-loaded instance under the worst-case cap.
    The simulator shows neither bound dominating (README, "Simulator").
    """

    name = "oracle-lfs"

    def __init__(self, lengths: dict[str, int] | None = None, engine: bool = True):
        self.lengths = dict(lengths or {})
        self.engine = engine
        self.admission = "engine" if engine else "kv"

    def reset(self, groups, capacities, kv=None) -> None:
        super().reset(groups, capacities, kv)
        reqs = [r for g in groups for r in g]
        # Stable: equal lengths keep submission order, so the plan is deterministic.
        self.queue = deque(sorted(reqs, key=lambda r: -self._length(r)))
        self.free = list(kv.tokens) if kv is not None else None
        self.plan: dict[int, deque] | None = None  # LPT: instance -> its requests, longest first
        self.held: dict[str, tuple[int, int]] = {}  # running request_id -> (instance, tokens reserved)

    def _length(self, r) -> int:
        return min(r.max_tokens, self.lengths.get(r.request_id, r.max_tokens))

    def _tokens(self, r) -> int:
        block = self.kv.block_tokens
        return -(-(r.prompt_len + self._length(r) + self.kv.lookahead) // block) * block

    def next_dispatches(self) -> list[Dispatch]:
        if self.engine:
            return self._lpt()
        if self.free is None:
            return self._dispatch_in_order(self.queue)
        out = []
        while self.queue:
            r = self.queue[0]
            need = self._tokens(r)
            room = [(self.free[i], -i) for i in range(len(self.capacities))
                    if self.running[i] < self.capacities[i] and self.free[i] >= need]
            if not room:
                break  # longest first: nothing overtakes the head
            inst = -max(room)[1]
            self.queue.popleft()
            self.free[inst] -= need
            self.held[r.request_id] = (inst, need)
            out.append(self._start(r, inst, r.remaining))
        return out

    def _lpt(self) -> list[Dispatch]:
        """Longest first, each request to the instance with the fewest true tokens assigned
        (LPT), as many as each instance's capacity takes (with engine admission: all)."""
        out = []
        alive = [i for i, c in enumerate(self.capacities) if c > 0]
        if self.plan is None:  # assigned once, at the first call
            self.plan = {i: deque() for i in alive}
            load = dict.fromkeys(alive, 0)
            for r in self.queue:
                inst = min(alive, key=lambda i: (load[i], i))
                load[inst] += self._length(r)
                self.plan[inst].append(r)
            self.queue.clear()
        for i, queue in self.plan.items():
            while queue and self.running[i] < self.capacities[i]:
                r = queue.popleft()
                out.append(self._start(r, i, r.remaining))
        return out

    def on_chunk_done(self, request, instance: int) -> None:
        if self.free is not None and not self.engine:
            inst, need = self.held.pop(request.request_id)
            self.free[inst] += need
        super().on_chunk_done(request, instance)

    def on_instance_lost(self, instance: int, in_flight) -> None:
        if self.free is not None and not self.engine:
            for r in in_flight:
                self.held.pop(r.request_id, None)
            self.free[instance] = 0
        waiting = list(self.plan.pop(instance, ())) if self.plan is not None else []
        super().on_instance_lost(instance, in_flight)
        for r in waiting:
            self._return(r)

    def _return(self, request) -> None:
        if self.plan is not None:  # LPT: to the alive instance with the shortest queue
            alive = [i for i in self.plan if self.capacities[i] > 0]
            self.plan[min(alive, key=lambda i: (len(self.plan[i]), i))].appendleft(request)
            return
        self.queue.appendleft(request)
