"""Rollout policies on a toy executor (pure logic): completion exactly once, exact
token concatenation across chunks, chunk bounds, capacities, Alg. 2 ordering."""
import heapq
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from umbra.rollout.policies import POLICY_NAMES, SeerPolicy, make_policy
from umbra.rollout.request import make_groups


def toy_rollout(policy, groups, capacities, true_len):
    """Each chunk yields the next tokens of a fixed per-request sequence (token = position),
    one time unit per token; EOS when the true length is reached. Returns the dispatch log."""
    policy.reset(groups, capacities)
    now, events, log, running = 0.0, [], [], [0] * len(capacities)
    seq = 0
    while True:
        for d in policy.next_dispatches():
            r = d.request
            assert d.max_tokens >= 1 and d.max_tokens <= r.remaining
            running[d.instance] += 1
            assert running[d.instance] <= capacities[d.instance]
            n = min(d.max_tokens, true_len[r.request_id] - len(r.output_token_ids))
            start = len(r.output_token_ids)
            tokens = list(range(start, start + n))
            reason = "stop" if start + n == true_len[r.request_id] else "length"
            seq += 1
            heapq.heappush(events, (now + max(n, 1), seq, r, d.instance, tokens, reason, d.max_tokens))
            log.append((r.request_id, d.instance, d.max_tokens))
        if not events:
            assert policy.finished
            return log
        now, _, r, inst, tokens, reason, bound = heapq.heappop(events)
        assert len(tokens) <= bound
        running[inst] -= 1
        r.add_chunk(inst, tokens, reason, now - len(tokens), now)
        policy.on_chunk_done(r, inst)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 6), st.integers(2, 6), st.integers(1, 4), st.integers(1, 40), st.integers(1, 5),
       st.sampled_from(POLICY_NAMES), st.integers(0, 10_000))
def test_every_request_completes_once_with_exact_tokens(n_groups, g_size, n_inst, max_tokens, cap, name, seed):
    rng = random.Random(seed)
    groups = make_groups([[1, 2]] * n_groups, g_size, max_tokens, seed)
    true_len = {r.request_id: rng.randint(1, max_tokens + 5) for g in groups for r in g}
    chunked = name in ("seer", "seer-oracle")
    options = {"chunk_tokens": rng.randint(1, 8), "kv_block_tokens": rng.choice([1, 2, 4])} if chunked else {}
    if name in ("oracle-lfs", "seer-oracle"):
        options["lengths"] = true_len
    policy = make_policy(name, **options)
    log = toy_rollout(policy, groups, [cap] * n_inst, true_len)
    for g in groups:
        for r in g:
            want = min(true_len[r.request_id], max_tokens)
            assert r.output_token_ids == list(range(want))  # no token added or dropped at a boundary
            assert r.done and sum(c.tokens for c in r.chunks) == want
    finished = [rid for rid, _, _ in log]
    assert set(finished) == {r.request_id for g in groups for r in g}
    if not chunked:  # whole requests: exactly one dispatch each
        assert len(finished) == len(set(finished))


def test_seer_chunk_bound_is_min_of_chunk_and_remaining():
    groups = make_groups([[1]], 1, 10, 0)
    log = toy_rollout(SeerPolicy(chunk_tokens=4), groups, [1], {"g0-r0": 100})
    assert [b for _, _, b in log] == [4, 4, 2]


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 300), st.integers(0, 300), st.integers(1, 700), st.integers(1, 128),
       st.sampled_from([1, 16, 32]))
def test_seer_chunk_ends_one_token_past_a_kv_block(prompt_len, generated, max_tokens, chunk, block):
    r = make_groups([[7] * prompt_len], 1, max_tokens + generated, 0)[0][0]
    r.output_token_ids = [0] * generated
    budget = SeerPolicy(chunk_tokens=chunk, kv_block_tokens=block).chunk_budget(r)
    assert 1 <= budget <= min(chunk, r.remaining)  # never beyond the chunk bound
    if budget < r.remaining and chunk >= block:  # the request goes on: the next chunk re-prefills 1 token
        assert (prompt_len + generated + budget) % block == 1 % block
        assert budget > chunk - block
    if block == 1 or chunk < block or r.remaining <= chunk:
        assert budget == min(chunk, r.remaining)


def test_alg2_speculative_first_then_longest_estimate_first():
    # 3 groups x 2 requests, one instance running one request at a time.
    groups = make_groups([[1], [2], [3]], 2, 50, 0)
    true_len = {"g0-r0": 5, "g0-r1": 5, "g1-r0": 30, "g1-r1": 30, "g2-r0": 10, "g2-r1": 10}
    log = toy_rollout(SeerPolicy(chunk_tokens=100), groups, [1], true_len)
    order = [rid for rid, _, _ in log]
    # every group's speculative request (index 0) runs first ...
    assert order[:3] == ["g0-r0", "g1-r0", "g2-r0"]
    # ... then the rest longest-estimate-first (estimates 30, 10, 5).
    assert order[3:] == ["g1-r1", "g2-r1", "g0-r1"]


def test_alg2_speculative_queue_is_shortest_generated_first():
    groups = make_groups([[1], [2]], 1, 50, 0)
    p = SeerPolicy(chunk_tokens=3)
    p.reset(groups, [1])
    (d,) = p.next_dispatches()
    assert d.request.request_id == "g0-r0"
    d.request.add_chunk(0, [5, 6, 7], "length", 0.0, 1.0)  # g0's speculative request generated 3 tokens
    p.on_chunk_done(d.request, 0)
    assert p.next_dispatches()[0].request.request_id == "g1-r0"  # fewer generated goes first


def test_policy_refuses_used_requests():
    groups = make_groups([[1]], 2, 5, 0)
    groups[0][0].output_token_ids = [1]
    with pytest.raises(ValueError, match="fresh"):
        SeerPolicy().reset(groups, [1])


def test_seer_without_context_awareness_is_fifo():
    groups = make_groups([[1], [2]], 2, 10, 0)
    log = toy_rollout(SeerPolicy(chunk_tokens=100, context_aware=False), groups, [1], {
        "g0-r0": 1, "g0-r1": 9, "g1-r0": 2, "g1-r1": 3})
    assert [rid for rid, _, _ in log] == ["g0-r0", "g0-r1", "g1-r0", "g1-r1"]


def test_anti_starvation_serves_a_long_waiter():
    groups = make_groups([[1], [2], [3]], 1, 100, 0)
    p = SeerPolicy(chunk_tokens=1, starvation_limit=2)
    log = toy_rollout(p, groups, [1], {"g0-r0": 50, "g1-r0": 50, "g2-r0": 50})
    first_seen = {}
    for i, (rid, _, _) in enumerate(log):
        first_seen.setdefault(rid, i)
    assert max(first_seen.values()) <= 3  # nobody waits behind the others for long


def test_affinity_keeps_a_request_on_its_instance_and_counts_migrations():
    groups = make_groups([[1], [2]], 1, 20, 0)
    p = SeerPolicy(chunk_tokens=5, affinity_spread=1)
    log = toy_rollout(p, groups, [2, 2], {"g0-r0": 20, "g1-r0": 20})
    by_req = {}
    for rid, inst, _ in log:
        by_req.setdefault(rid, set()).add(inst)
    assert all(len(v) == 1 for v in by_req.values()) and p.migrations == 0


def test_static_group_assigns_whole_groups_round_robin():
    groups = make_groups([[1], [2], [3]], 2, 8, 0)
    log = toy_rollout(make_policy("static-group"), groups, [4, 4], {r.request_id: 3 for g in groups for r in g})
    inst_of = {rid: inst for rid, inst, _ in log}
    assert {inst_of["g0-r0"], inst_of["g0-r1"], inst_of["g2-r1"]} == {0} and inst_of["g1-r0"] == 1


def test_unknown_policy_and_bad_options():
    with pytest.raises(ValueError):
        make_policy("fastest")
    with pytest.raises(ValueError):
        SeerPolicy(chunk_tokens=0)


def test_every_list_of_policy_names_agrees_with_the_policy_classes():
    """The run config, the named variants and the policies name the same policies."""
    from typing import get_args

    from umbra.config import RolloutPolicy
    from umbra.rollout.policies import POLICIES
    from umbra.rollout.policies.variants import (BASELINES, DEFAULT_VARIANTS, ORACLE_VARIANTS, SEER_VARIANTS,
                                                 VARIANT_NAMES, variant)

    assert set(get_args(RolloutPolicy)) <= set(POLICIES) and "oracle-lfs" in POLICIES
    assert set(VARIANT_NAMES) == set(BASELINES) | set(SEER_VARIANTS) | set(ORACLE_VARIANTS)
    assert set(DEFAULT_VARIANTS) <= set(VARIANT_NAMES)
    assert all(variant(n, 8).policy in POLICIES for n in VARIANT_NAMES)


@pytest.mark.parametrize("group_floor", [False, True])
def test_group_floor_raises_a_groups_estimate_to_a_running_members_length(group_floor):
    # one group of 3: its probe ends at 3 tokens (estimate 3); a sibling then runs a 12-token
    # chunk without ending. With group_floor the group's estimate rises to 12, and its waiting
    # member ranks by it; without, the estimate stays at the probe's 3 (Alg. 2 as written).
    groups = make_groups([[1]], 3, 50, 0)
    p = SeerPolicy(chunk_tokens=12, group_floor=group_floor)
    p.reset(groups, [1])
    (d,) = p.next_dispatches()
    d.request.add_chunk(0, [5, 6, 7], "stop", 0.0, 1.0)
    p.on_chunk_done(d.request, 0)
    (d,) = p.next_dispatches()
    assert d.request.request_id == "g0-r1"
    d.request.add_chunk(0, list(range(12)), "length", 1.0, 2.0)
    p.on_chunk_done(d.request, 0)
    waiting = p.by_id["g0-r2"]
    assert p.estimate[0] == (12 if group_floor else 3)
    assert p._key(waiting) == (1, -(12 if group_floor else 3), 1)


def test_seer_oracle_runs_longest_true_length_first_with_no_probes():
    # 3 groups x 2, one slot: Alg. 2 would run the three probes first; the oracle knows every
    # length and runs longest first, a group's members apart where their lengths differ.
    groups = make_groups([[1], [2], [3]], 2, 50, 0)
    true_len = {"g0-r0": 5, "g0-r1": 40, "g1-r0": 30, "g1-r1": 3, "g2-r0": 10, "g2-r1": 12}
    log = toy_rollout(make_policy("seer-oracle", lengths=true_len, chunk_tokens=100), groups, [1], true_len)
    assert [rid for rid, _, _ in log] == ["g0-r1", "g1-r0", "g2-r1", "g2-r0", "g0-r0", "g1-r1"]


def test_seer_oracle_started_request_continues_before_an_equal_new_one():
    # chunks of 4 on one slot: the started 20-token request is not overtaken by the equal new one
    groups = make_groups([[1], [2]], 1, 50, 0)
    true_len = {"g0-r0": 20, "g1-r0": 20}
    log = toy_rollout(make_policy("seer-oracle", lengths=true_len, chunk_tokens=4), groups, [1], true_len)
    assert [rid for rid, _, _ in log] == ["g0-r0"] * 5 + ["g1-r0"] * 5
