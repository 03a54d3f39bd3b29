"""Rollout policies when an instance dies mid-rollout (pure logic, a toy executor): its
running chunks run again elsewhere, nothing goes to it afterwards, and every request of
every group completes exactly once with exactly its tokens."""
import heapq
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from umbra.rollout.policies import POLICY_NAMES, make_policy
from umbra.rollout.request import make_groups


def rollout_losing(policy, groups, capacities, true_len, lose_at: int, lost: int):
    """Like a real rollout, but after ``lose_at`` finished chunks instance ``lost`` dies:
    the chunks running there are dropped (their tokens never arrive) and handed back."""
    policy.reset(groups, capacities)
    now, events, seq, done_chunks, dead = 0.0, [], 0, 0, False
    dispatched_after = []
    while True:
        for d in policy.next_dispatches():
            r = d.request
            if dead:
                dispatched_after.append(d.instance)
            n = min(d.max_tokens, true_len[r.request_id] - len(r.output_token_ids))
            start = len(r.output_token_ids)
            reason = "stop" if start + n == true_len[r.request_id] else "length"
            seq += 1
            heapq.heappush(events, (now + max(n, 1), seq, r, d.instance, list(range(start, start + n)), reason))
        if not events:
            assert policy.finished
            return dispatched_after
        if not dead and done_chunks >= lose_at:
            dead = True
            in_flight = [e for e in events if e[3] == lost]
            events = [e for e in events if e[3] != lost]
            heapq.heapify(events)
            policy.on_instance_lost(lost, [e[2] for e in in_flight])
            assert policy.lost_instances == [lost] and policy.redispatched == len(in_flight)
            continue
        now, _, r, inst, tokens, reason = heapq.heappop(events)
        r.add_chunk(inst, tokens, reason, now - len(tokens), now)
        done_chunks += 1
        policy.on_chunk_done(r, inst)


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 6), st.integers(2, 6), st.integers(2, 4), st.integers(1, 40), st.integers(1, 5),
       st.sampled_from(POLICY_NAMES), st.integers(0, 30), st.integers(0, 10_000))
def test_requests_of_a_lost_instance_complete_once_elsewhere(n_groups, g_size, n_inst, max_tokens, cap, name,
                                                             lose_at, seed):
    rng = random.Random(seed)
    groups = make_groups([[1, 2]] * n_groups, g_size, max_tokens, seed)
    true_len = {r.request_id: rng.randint(1, max_tokens + 5) for g in groups for r in g}
    options = {"chunk_tokens": rng.randint(1, 8), "kv_block_tokens": rng.choice([1, 2, 4])} if name == "seer" else {}
    if name == "oracle-lfs":
        options = {"lengths": true_len}
    lost = rng.randrange(n_inst)
    after = rollout_losing(make_policy(name, **options), groups, [cap] * n_inst, true_len, lose_at, lost)
    assert lost not in after
    for g in groups:
        for r in g:
            want = min(true_len[r.request_id], max_tokens)
            assert r.output_token_ids == list(range(want))  # the lost chunk's tokens never count
            assert r.done and sum(c.tokens for c in r.chunks) == want


@pytest.mark.parametrize("name", POLICY_NAMES)
def test_losing_the_last_instance_is_an_error(name):
    policy = make_policy(name, **({"lengths": {}} if name == "oracle-lfs" else {}))
    groups = make_groups([[1, 2]], 2, 8, 0)
    policy.reset(groups, [2])
    running = policy.next_dispatches()
    with pytest.raises(RuntimeError, match="every rollout instance failed"):
        policy.on_instance_lost(0, [d.request for d in running])


def test_seer_rehomes_requests_cached_on_the_lost_instance():
    """A started request waiting for its next chunk on the lost instance's KV cache must not
    be stranded there: another instance takes it (from the fresh heap)."""
    policy = make_policy("seer", chunk_tokens=2)
    groups = make_groups([[1, 2]], 2, 8, 0)
    policy.reset(groups, [1, 1])
    first = policy.next_dispatches()
    on_1 = next(d for d in first if d.instance == 1)
    on_1.request.add_chunk(1, [0, 1], "length", 0.0, 1.0)
    policy.on_chunk_done(on_1.request, 1)  # now waits, cached on instance 1
    on_0 = next(d for d in first if d.instance == 0)
    policy.on_instance_lost(1, [])
    on_0.request.add_chunk(0, [0, 1], "length", 0.0, 1.0)
    policy.on_chunk_done(on_0.request, 0)
    nxt = policy.next_dispatches()
    assert {d.request.request_id for d in nxt} <= {on_0.request.request_id, on_1.request.request_id}
    assert all(d.instance == 0 for d in nxt)
    assert nxt, "instance 0 must take a waiting request"
