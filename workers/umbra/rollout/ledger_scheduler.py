"""vLLM's scheduler with prefix-cache eviction that follows the policy's KV ledger (ours).

vLLM keeps a finished request's full KV blocks cached in its free queue and evicts them
least-recently-freed first. Divided rollout parks a request between chunks by finishing
its vLLM request, so LRU eviction drops parked requests' KV as soon as a request that is
truly done (or given up) freed its blocks after them — the ledger counted the parked
ones resident, and their next chunks re-prefill. This scheduler (engine arg
``scheduler_cls``; it runs in vLLM's engine-core process) reads what each chunk says in
``SamplingParams.extra_args["umbra_kv"]``:

- ``key``: the rollout request it belongs to; ``final``: the chunk may be its last;
- ``release``: rollout requests whose KV the ledger gave up on this instance.

A chunk that ends at EOS or is ``final`` releases its blocks; any other end parks them
(remembered by ``key``). Released blocks go to the front of the free queue (reused
first, still cached until then) unless a parked request still holds them (a group's
shared prompt blocks), so the engine evicts what the ledger freed, never what it keeps.
Requests without ``umbra_kv`` (policies without a ledger) are scheduled as vLLM does, except
that a speculating engine does not pad chunk starts (:mod:`umbra.speculative.unpadded_chunks`).
"""
from __future__ import annotations

from collections import Counter

from vllm.v1.core.sched.async_scheduler import AsyncScheduler
from vllm.v1.core.sched.scheduler import Scheduler
from vllm.v1.request import RequestStatus

from umbra.rollout import engine_wait
from umbra.speculative.unpadded_chunks import unpad_chunk_starts

# vLLM imports this module in the engine-core process (``scheduler_cls``), where the wait on
# the worker's reply to each step would otherwise spin a core
engine_wait.apply()

KEY = "umbra_kv"


class LedgerEvictionMixin:
    """Parked requests' blocks stay cached; released ones are reused first (ours).

    The free queue's front is kept in two tiers ahead of vLLM's LRU order: blocks of
    requests that are done, then blocks of requests the ledger gave up (a given-up request
    whose blocks are not reused yet still hits them when it comes back). Parked requests'
    blocks stay behind both, where vLLM put them.
    """

    def _umbra_init(self) -> None:
        self._parked: dict[str, list[tuple]] = {}  # rollout request -> [(block, its hash when parked)]
        self._held: Counter = Counter()            # (block id, hash) -> parked records holding it
        self._pending: tuple[list, list] = ([], [])  # (done, given up): [(block, hash)] to place
        self._tiers: tuple[dict, dict] = ({}, {})    # the same, placed: block id -> (block, hash)

    def add_request(self, request) -> None:
        note = _note(request)
        if note is not None:
            for key in note.get("release", ()):
                if key != note["key"]:
                    self._unpark(key, tier=1)
            self._flush()  # while this request's own (shared prompt) blocks are still held
            self._unpark(note["key"], tier=None)  # it runs again: its blocks are touched
        super().add_request(request)

    def schedule(self, *args, **kwargs):
        self._flush()
        return super().schedule(*args, **kwargs)

    def _free_request_blocks(self, request) -> None:
        if not request.is_finished():  # preempted: vLLM's own order (it resumes from its cached prefix)
            return super()._free_request_blocks(request)
        note = _note(request)
        blocks = []
        if note is not None:
            blocks = [b for group in self.kv_cache_manager.get_blocks(request.request_id).blocks for b in group]
        super()._free_request_blocks(request)
        if note is None:
            return
        record = [(b, b.block_hash) for b in blocks if b.block_hash is not None]
        self._unpark(note["key"], tier=1)  # a stale record (should not exist)
        if request.status != RequestStatus.FINISHED_LENGTH_CAPPED or note.get("final", True):
            # done: only its group's prompt may be read again (placed at the next schedule())
            self._pending[0].extend(reversed(record))
        else:
            self._parked[note["key"]] = record
            self._held.update((b.block_id, h) for b, h in record)

    def reset_prefix_cache(self, *args, **kwargs) -> bool:
        ok = super().reset_prefix_cache(*args, **kwargs)
        if ok:
            self._parked.clear()
            self._held.clear()
            for x in self._pending + self._tiers:
                x.clear()
        return ok

    def _unpark(self, key: str, tier: int | None) -> None:
        record = self._parked.pop(key, None)
        if record is None:
            return
        for b, h in record:
            self._held[b.block_id, h] -= 1
            if self._held[b.block_id, h] <= 0:
                del self._held[b.block_id, h]
        if tier is not None:
            self._pending[tier].extend(reversed(record))  # tail first: a prefix hit survives longest

    def _flush(self) -> None:
        """Place pending blocks in their tier and rebuild the free queue's front: blocks with
        no cached content (vLLM's own front), then done, then given up. A block leaves the
        tiers once reused (taken, or rehashed) or held by a parked request (a group's shared
        prompt blocks). vLLM allocates only inside ``schedule()``, which flushes first."""
        if not (self._pending[0] or self._pending[1]):
            return
        for pending, tier, other in ((self._pending[0], self._tiers[0], self._tiers[1]),
                                     (self._pending[1], self._tiers[1], self._tiers[0])):
            for b, h in pending:
                other.pop(b.block_id, None)  # the latest release decides a block's tier
                tier.pop(b.block_id, None)   # and its place in it (the latest last)
                tier[b.block_id] = (b, h)
            pending.clear()
        queue, front = self.kv_cache_manager.block_pool.free_block_queue, []
        for tier in self._tiers:
            for bid, (b, h) in list(tier.items()):
                if b.ref_cnt or b.block_hash != h or (bid, h) in self._held or b.is_null:
                    del tier[bid]
                    continue
                queue.remove(b)
                front.append(b)
        empty, b = 0, queue.fake_free_list_head.next_free_block
        while b is not queue.fake_free_list_tail and b.block_hash is None:
            empty, b = empty + 1, b.next_free_block
        run = queue.popleft_n(empty)
        queue.prepend_n(front)  # their hashes stay: a later chunk may still hit them until reused
        queue.prepend_n(run)


def _note(request) -> dict | None:
    params = getattr(request, "sampling_params", None)
    extra = getattr(params, "extra_args", None) or {}
    note = extra.get(KEY)
    return note if isinstance(note, dict) and "key" in note else None


class LedgerScheduler(LedgerEvictionMixin, Scheduler):
    """:class:`Scheduler` with ledger-following eviction (CPU, speculative engines); a
    speculating engine's chunk starts are not padded (:mod:`umbra.speculative.unpadded_chunks`)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._umbra_init()
        unpad_chunk_starts(self)


class AsyncLedgerScheduler(LedgerEvictionMixin, AsyncScheduler):
    """:class:`AsyncScheduler` with ledger-following eviction (GPU engines without custom drafts)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._umbra_init()
        unpad_chunk_starts(self)
