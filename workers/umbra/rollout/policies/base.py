"""The policy interface shared by every rollout policy."""
from __future__ import annotations

from dataclasses import dataclass

from umbra.rollout.request import Request


@dataclass(frozen=True)
class Dispatch:
    """Run ``request`` on ``instance`` for at most ``max_tokens`` more tokens (one chunk).
    ``kv_resident``: the policy's KV ledger holds the request's context there (None: the
    policy keeps no ledger); ``kv_release``: requests whose KV on that instance the ledger
    dropped since its last chunk there (the engine evicts them first)."""

    request: Request
    instance: int
    max_tokens: int
    kv_resident: bool | None = None
    kv_release: tuple[str, ...] = ()


class Policy:
    """Base class. The driver calls ``reset`` once per rollout, then alternates
    ``next_dispatches`` (whenever slots are free) and ``on_chunk_done``.

    ``capacities[i]`` is the most requests instance ``i`` may run at once. ``admission``
    says what the caller puts there: ``"cap"`` — a worst-case cap from the KV budget
    (every running request may grow to the longest context), so the engine never preempts;
    ``"kv"`` — the engine's sequence limit, the policy admitting by the KV it is given
    (``kv``, a :class:`~umbra.rollout.policies.kv_ledger.KVBudget`); ``"engine"`` — no
    limit: the engine's own scheduler admits and preempts (veRL's way).
    """

    name = "base"
    chunked = False
    admission = "cap"

    def reset(self, groups: list[list[Request]], capacities: list[int], kv=None) -> None:
        if not capacities or min(capacities) < 1:
            raise ValueError("every instance needs a capacity >= 1")
        if any(r.done or r.num_generated for g in groups for r in g):
            raise ValueError("a rollout needs fresh requests (make_groups again)")
        self.groups = groups
        self.kv = kv
        self.capacities = list(capacities)
        self.running = [0] * len(capacities)
        self.outstanding = sum(len(g) for g in groups)
        self.lost_instances: list[int] = []  # instances that died during this rollout
        self.redispatched = 0  # chunks that were running on them and ran again elsewhere

    def next_dispatches(self) -> list[Dispatch]:
        """Chunks to start now, given the free slots; empty when nothing fits."""
        raise NotImplementedError

    def on_chunk_done(self, request: Request, instance: int) -> None:
        """A chunk of ``request`` ended on ``instance`` (the request holds its new tokens)."""
        self.running[instance] -= 1
        if request.done:
            self.outstanding -= 1
        else:
            self._requeue(request)

    def on_instance_lost(self, instance: int, in_flight: list[Request]) -> None:
        """Instance ``instance`` died: it takes no more chunks, and the chunks that were
        running there (``in_flight``; their requests hold only the tokens of finished
        chunks) go back to the buffer to run on the other instances.

        Raises RuntimeError when no instance is left.
        """
        self.capacities[instance] = 0
        self.running[instance] = 0
        self.lost_instances.append(instance)
        self.redispatched += len(in_flight)
        if not any(self.capacities):
            raise RuntimeError("every rollout instance failed")
        for r in in_flight:
            self._return(r)

    def _return(self, request: Request) -> None:
        """Put back a request whose chunk was lost with its instance."""
        self._requeue(request)

    def _requeue(self, request: Request) -> None:
        raise NotImplementedError(f"{self.name} runs requests whole; a request came back unfinished")

    def _start(self, request: Request, instance: int, max_tokens: int, kv_resident: bool | None = None) -> Dispatch:
        self.running[instance] += 1
        ledger = getattr(self, "ledger", None)
        release = ledger.take_dropped(instance) if ledger is not None else ()
        return Dispatch(request, instance, max_tokens, kv_resident, release)

    def _dispatch_in_order(self, queue) -> list[Dispatch]:
        """Whole requests from the front of ``queue`` (a deque), each to the least-loaded
        instance, while any instance has a free slot."""
        out = []
        while queue:
            inst = self.least_loaded()
            if inst is None:
                break
            req = queue.popleft()
            out.append(self._start(req, inst, req.remaining))
        return out

    @property
    def finished(self) -> bool:
        return self.outstanding == 0

    def least_loaded(self) -> int | None:
        """Instance with the most free slots (ties: lowest id), or None if all are full."""
        free = [(self.capacities[i] - self.running[i], -i) for i in range(len(self.capacities))]
        best = max(free)
        return -best[1] if best[0] > 0 else None
