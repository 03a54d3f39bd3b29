"""Eviction that follows the KV ledger, on vLLM's own block pool and free queue (the
scheduler's bookkeeping around them is the only stand-in): a parked request's cached
blocks outlive those of done and given-up requests freed after it, blocks without cached
content are still reused first, a preempted request keeps vLLM's order, and the free
queue stays consistent under random use."""
import random

import pytest

pytest.importorskip("vllm")

from vllm.v1.core.block_pool import BlockPool  # noqa: E402
from vllm.v1.core.kv_cache_manager import KVCacheBlocks  # noqa: E402
from vllm.v1.request import RequestStatus  # noqa: E402

from umbra.rollout.ledger_scheduler import LedgerEvictionMixin  # noqa: E402


class _Params:
    def __init__(self, note):
        self.extra_args = {"umbra_kv": note} if note else None


class _Request:
    def __init__(self, rid, note, status=RequestStatus.RUNNING):
        self.request_id, self.sampling_params, self.status = rid, _Params(note), status

    def is_finished(self):
        return RequestStatus.is_finished(self.status)


class _KVManager:
    """vLLM's BlockPool with the request -> blocks map the real manager keeps."""

    def __init__(self, blocks):
        self.block_pool = BlockPool(blocks, True, 16)
        self.req_to_blocks = {}

    def get_blocks(self, rid):
        return KVCacheBlocks((self.req_to_blocks.get(rid) or [],))


class _SchedulerBase:
    """What the mixin calls on vLLM's Scheduler: freeing returns blocks tail first, as vLLM does."""

    def __init__(self, blocks):
        self.kv_cache_manager = _KVManager(blocks)

    def add_request(self, request):
        pass

    def schedule(self):
        pass

    def reset_prefix_cache(self):
        return True

    def _free_request_blocks(self, request):
        blocks = self.kv_cache_manager.req_to_blocks.pop(request.request_id, [])
        self.kv_cache_manager.block_pool.free_blocks(reversed(blocks))


class _Scheduler(LedgerEvictionMixin, _SchedulerBase):
    def __init__(self, blocks):
        _SchedulerBase.__init__(self, blocks)
        self._umbra_init()


class _Engine:
    """Runs chunks through the mixin on a real block pool: every full block gets a hash."""

    def __init__(self, blocks=64):
        self.s = _Scheduler(blocks)
        self.pool = self.s.kv_cache_manager.block_pool
        self.serial = 0

    def run(self, key, n_blocks, final=False, release=(), hits=(), end=RequestStatus.FINISHED_LENGTH_CAPPED):
        """Schedule a chunk of ``key`` holding ``hits`` (cached blocks) plus ``n_blocks`` new
        ones (the last one partial), then end it with ``end``; returns its blocks."""
        self.serial += 1
        rid = f"{key}-{self.serial}"
        note = {"key": key, "final": final, "release": list(release)}
        self.s.add_request(_Request(rid, note))
        self.s.schedule()
        self.pool.touch(list(hits))
        new = self.pool.get_new_blocks(n_blocks)
        for b in new[:-1]:
            self.serial += 1
            self.pool._insert_block_hash(self.serial.to_bytes(8, "little") + b"\0\0\0\0", b, None)
        blocks = list(hits) + new
        self.s.kv_cache_manager.req_to_blocks[rid] = blocks
        r = _Request(rid, note, end)
        self.s._free_request_blocks(r)
        return blocks

    def cached(self, blocks):
        return [b.block_hash is not None and b.ref_cnt == 0 for b in blocks[:-1]]

    def free_order(self):
        q, out = self.pool.free_block_queue, []
        b = q.fake_free_list_head.next_free_block
        while b is not q.fake_free_list_tail:
            out.append(b)
            b = b.next_free_block
        return out


def test_a_parked_request_outlives_done_requests_freed_after_it():
    e = _Engine(blocks=40)
    parked = e.run("a", 10)                                             # a parks (9 cached blocks)
    done = e.run("b", 10, end=RequestStatus.FINISHED_STOPPED)           # b ends at EOS after it
    e.run("c", 12, final=True)                                          # c's last chunk
    e.s.schedule()
    # 39 usable blocks, 9 of them a's cached ones; vLLM's LRU order would reuse a's (freed
    # first) before b's and c's
    e.pool.get_new_blocks(39 - 9)
    assert all(e.cached(parked)) and not any(e.cached(done))


def test_given_up_blocks_go_after_done_ones_and_before_parked_ones():
    e = _Engine(blocks=64)
    kept = e.run("a", 6)
    given_up = e.run("b", 6)
    done = e.run("c", 6, end=RequestStatus.FINISHED_STOPPED)
    e.s.add_request(_Request("d-1", {"key": "d", "final": False, "release": ["b"]}))  # the ledger gave b up
    e.s.schedule()
    order = e.free_order()
    pos = {b.block_id: i for i, b in enumerate(order)}
    empty = max(i for i, b in enumerate(order) if b.block_hash is None)  # no cached content: reused first
    tiers = [[pos[b.block_id] for b in blocks[:-1]] for blocks in (done, given_up, kept)]
    assert empty < min(tiers[0]) and max(tiers[0]) < min(tiers[1]) and max(tiers[1]) < min(tiers[2])


def test_a_preempted_request_keeps_vllm_order_and_nothing_is_parked():
    e = _Engine(blocks=32)
    blocks = e.run("a", 5, end=RequestStatus.RUNNING)  # preempted: freed while still running
    assert "a" not in e.s._parked and not e.s._pending[0]
    assert [b.block_id for b in e.free_order()[-4:]] == [b.block_id for b in reversed(blocks[:-1])]


def test_the_free_queue_stays_consistent_under_random_chunks():
    rng = random.Random(0)
    e = _Engine(blocks=300)
    parked: dict[str, list] = {}
    for step in range(3000):
        live = [k for k in parked]
        key = rng.choice(live) if live and rng.random() < 0.6 else f"n{step}"
        release = [k for k in rng.sample(live, min(len(live), rng.randint(0, 2))) if k != key]
        for k in release:
            parked.pop(k)
        hits = [b for b, h in parked.pop(key, []) if b.block_hash == h and b.ref_cnt == 0][:8]
        end = rng.choice([RequestStatus.FINISHED_LENGTH_CAPPED] * 3 + [RequestStatus.FINISHED_STOPPED,
                                                                       RequestStatus.FINISHED_ABORTED,
                                                                       RequestStatus.RUNNING])
        blocks = e.run(key, rng.randint(1, 12), final=rng.random() < 0.2, release=release, hits=hits, end=end)
        if key in e.s._parked:
            parked[key] = [(b, b.block_hash) for b in blocks]
        order = e.free_order()
        assert len(order) == len({b.block_id for b in order}) == e.pool.free_block_queue.num_free_blocks
        assert all(b.ref_cnt == 0 and not b.is_null for b in order)
        assert {b.block_id for b in e.pool.blocks if b.ref_cnt == 0 and not b.is_null} == {b.block_id for b in order}
