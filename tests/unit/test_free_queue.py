"""The simulator's model of vLLM's free KV block queue (pure logic): what a returning
request still finds cached."""
from umbra.sim.free_queue import DONE, GIVEN_UP, LRU, FreeQueue


def test_never_used_blocks_then_done_then_given_up_then_vllm_order():
    q = FreeQueue(100)
    q.free(LRU, 64, "parked-lru")
    q.free(GIVEN_UP, 64, "given-up")
    q.free(DONE, 32)
    q.hand_out_since(100)
    assert q.take("given-up") == 64            # the never-used blocks went first
    q.free(GIVEN_UP, 64, "given-up")
    q.hand_out_since(100 + 32 + 16)
    assert q.take("given-up") == 48            # then the done ones, then its tail
    assert q.take("parked-lru") == 64          # vLLM's own order comes last
    assert q.take("parked-lru") == 0           # a record is found once


def test_the_earlier_freed_of_two_preempted_requests_is_reused_first():
    # What counting "allocated since" per request overstated: the later record is untouched
    # until the earlier one is used up.
    q = FreeQueue(0)
    q.free(LRU, 80, "a")
    q.free(LRU, 80, "b")
    q.hand_out_since(96)
    assert q.take("b") == 64 and q.take("a") == 0


def test_a_record_freed_again_replaces_the_old_one():
    q = FreeQueue(0)
    q.free(LRU, 48, "a")
    q.free(LRU, 32, "x")
    q.free(LRU, 96, "a")                         # its old place in the queue is skipped
    q.hand_out_since(32)
    assert q.take("a") == 96                     # the 32 handed out were x's
    assert q.take("x") == 0


def test_fit_hands_out_the_front_until_the_queue_is_the_free_kv():
    q = FreeQueue(64)                            # 64 never used
    q.free(LRU, 32, "a")
    q.free(LRU, 32, "b")
    assert q.held == 128
    q.fit(48)                                    # running requests took 80 tokens
    assert q.held == 48 and q.take("a") == 16 and q.take("b") == 32
    assert q.held == 0
    q.fit(10)                                    # nothing to hand out: free KV above what it holds
    assert q.held == 0


def test_held_counts_what_is_in_the_queue_after_replacing_and_taking():
    q = FreeQueue(16)
    q.free(LRU, 32, "a")
    q.free(LRU, 48, "a")                         # replaces: the first record no longer counts
    assert q.held == 16 + 48
    assert q.take("a") == 48 and q.held == 16
    q.hand_out_since(100)                        # more than it holds: it runs dry
    assert q.held == 0 and q.empty == 0
