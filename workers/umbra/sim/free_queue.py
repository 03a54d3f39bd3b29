"""vLLM's free KV block queue, as far as it decides what a returning request finds cached (ours).

vLLM hands out free blocks from the front of one queue: blocks that never held content
first, then freed blocks in the order they were freed. A freed block keeps its content, a
prefix-cache hit, until it is handed out again. A request that comes back to an instance
(resumed after a preemption, or its next chunk after the KV ledger gave its KV up) finds
cached what of its freed record was not handed out since; vLLM frees a request's blocks last
block first, so what survives is a prefix.

Regions, front to back: never used; the ledger scheduler's two tiers
(:mod:`umbra.rollout.ledger_scheduler`: blocks of requests that are done, then of requests
whose KV the ledger gave up, each in release order); vLLM's own order (``LRU``: under vLLM's
scheduler everything freed; under the ledger the parked requests, which it keeps resident
and the simulator does not track here). Token counts are whole blocks of the caller's size.
"""
from __future__ import annotations

from collections import deque

DONE, GIVEN_UP, LRU = 0, 1, 2


class FreeQueue:
    """One instance's free queue: :meth:`free` appends a record, :meth:`take` removes one
    (its blocks are in use again). The caller first brings the front up to date, by what the
    instance allocated since (:meth:`hand_out_since`) or by how much KV is free
    (:meth:`fit`, where the running requests' KV is known exactly)."""

    def __init__(self, tokens: float):
        self.empty = float(tokens)                           # never held content
        self.regions = (deque(), deque(), deque())           # DONE, GIVEN_UP, LRU: [owner | None, tokens]
        self.records: dict[str, list] = {}                   # owner -> its entry (the latest)
        self.held = float(tokens)                            # everything in the queue
        self.seen = 0.0                                      # ``allocated`` already handed out

    def hand_out_since(self, allocated: float) -> None:
        """Hand out, from the front, what was allocated since the last call (``allocated``:
        the instance's running count of KV tokens allocated)."""
        self._hand_out(allocated - self.seen)
        self.seen = max(self.seen, allocated)

    def fit(self, free_tokens: float) -> None:
        """Hand out, from the front, what the queue holds beyond ``free_tokens``: vLLM's
        free queue is every block no running request holds."""
        self._hand_out(self.held - free_tokens)

    def _hand_out(self, n: float) -> None:
        if n <= 0:
            return
        self.held = max(0.0, self.held - n)
        took = min(n, self.empty)
        self.empty -= took
        n -= took
        for region in self.regions:
            while n > 0 and region:
                entry = region[0]
                took = min(n, entry[1])
                entry[1] -= took
                n -= took
                if entry[1] <= 0:
                    region.popleft()
                    if entry[0] is not None and self.records.get(entry[0]) is entry:
                        del self.records[entry[0]]

    def free(self, region: int, tokens: float, owner: str | None = None) -> None:
        """Append ``tokens`` freed into ``region`` (``owner``: a request that may come back)."""
        if tokens <= 0:
            return
        entry = [owner, float(tokens)]
        self.regions[region].append(entry)
        self.held += entry[1]
        if owner is not None:
            old = self.records.get(owner)
            if old is not None:
                self.held -= old[1]
                old[1] = 0.0  # superseded: skipped when the front reaches it
            self.records[owner] = entry

    def take(self, owner: str) -> float:
        """Tokens of ``owner``'s record still cached; the record leaves the queue."""
        entry = self.records.pop(owner, None)
        if entry is None:
            return 0.0
        tokens, entry[1] = entry[1], 0.0  # left in place, skipped when the front reaches it
        self.held -= tokens
        return tokens
