"""The KV ledger and Seer's Alg. 2 decisions over it (pure logic, a toy executor): the
ledger never goes over capacity, every request completes exactly once with its tokens
concatenated exactly, probes go first, a long group's new request overtakes a short
group's started one, parked KV stays resident."""
import heapq
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from umbra.rollout.policies import SeerPolicy, make_policy
from umbra.rollout.policies.kv_ledger import KVBudget, KVLedger
from umbra.rollout.request import make_groups


def kv_rollout(policy, groups, slots, kv, true_len, check=None):
    """Each chunk yields the next tokens of a fixed per-request sequence (token = position),
    one time unit per token. ``check(policy)`` runs after every dispatch round. Returns the
    dispatch log ``(request_id, instance, max_tokens, kv_resident)``."""
    policy.reset(groups, slots, kv)
    now, events, log, seq = 0.0, [], [], 0
    while True:
        for d in policy.next_dispatches():
            r = d.request
            assert 1 <= d.max_tokens <= r.remaining
            start = len(r.output_token_ids)
            n = min(d.max_tokens, true_len[r.request_id] - start)
            reason = "stop" if start + n == true_len[r.request_id] else "length"
            seq += 1
            heapq.heappush(events, (now + max(n, 1), seq, r, d.instance, list(range(start, start + n)), reason))
            log.append((r.request_id, d.instance, d.max_tokens, d.kv_resident))
        if check:
            check(policy)
        if not events:
            assert policy.finished, f"stalled with {policy.outstanding} left"
            return log
        now, _, r, inst, tokens, reason = heapq.heappop(events)
        r.add_chunk(inst, tokens, reason, now - len(tokens), now)
        policy.on_chunk_done(r, inst)


def within_capacity(policy):
    led = policy.ledger
    for i, cap in enumerate(led.capacity):
        assert 0 <= led.used[i] <= cap
        assert policy.running[i] <= policy.capacities[i]


def within_capacity_and_fresh_reserve(policy):
    """Also: the cached expected growth is what a fresh count over the residents gives."""
    within_capacity(policy)
    for i in range(len(policy.ledger.capacity)):
        cached, work = policy._expected_growth(i), policy._work(i)
        policy._growth_cache.clear()
        policy._work_cache.clear()
        assert cached == policy._expected_growth(i) and work == policy._work(i)


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 5), st.integers(1, 6), st.integers(1, 3), st.integers(1, 60), st.sampled_from([1, 4, 16]),
       st.booleans(), st.booleans(), st.integers(0, 10_000), st.sampled_from([True, "estimate", "adaptive", "auto", False]),
       st.sampled_from([None, 1, 2]), st.booleans(), st.booleans())
def test_ledger_never_over_capacity_and_every_request_completes_once(n_groups, g_size, n_inst, max_tokens, block,
                                                                     context_aware, shared_kv, seed, reserve, spread,
                                                                     evicts, work):
    rng = random.Random(seed)
    prompts = [[1] * rng.randint(1, 40) for _ in range(n_groups)]
    groups = make_groups(prompts, g_size, max_tokens, seed)
    true_len = {r.request_id: rng.randint(1, max_tokens + 5) for g in groups for r in g}
    longest = max(len(p) for p in prompts) + max_tokens
    # from exactly one longest request per instance up to several
    kv = KVBudget([-(-longest // block) * block * rng.randint(1, 4) for _ in range(n_inst)], block,
                  shared_kv=shared_kv)
    policy = SeerPolicy(chunk_tokens=rng.randint(1, 24), kv_block_tokens=block, context_aware=context_aware,
                        growth_reserve=reserve, balance_spread=spread, fresh_evicts=evicts, work_placement=work)
    log = kv_rollout(policy, groups, [rng.randint(1, 6)] * n_inst, kv, true_len, within_capacity_and_fresh_reserve)
    for g in groups:
        for r in g:
            want = min(true_len[r.request_id], max_tokens)
            assert r.output_token_ids == list(range(want))  # no token added or dropped at a boundary
            assert r.done and sum(c.tokens for c in r.chunks) == want
    assert {rid for rid, *_ in log} == {r.request_id for g in groups for r in g}
    assert not policy.ledger.residents and policy.ledger.used == [0] * n_inst  # all released


def test_a_probe_is_chosen_before_any_other_request_at_every_decision():
    groups = make_groups([[1], [2], [3]], 3, 40, 0)
    true_len = {r.request_id: 10 * (r.group_id + 1) for g in groups for r in g}
    probes = {g[0].request_id for g in groups}
    policy = SeerPolicy(chunk_tokens=4)
    seen = []

    def probes_first(p):
        waiting = set(p.entered)
        if waiting & probes:  # a probe waits: nothing else may have started in this round
            seen.append(waiting & probes)

    log = kv_rollout(policy, groups, [1], KVBudget([10_000], 1), true_len, probes_first)
    order = [rid for rid, *_ in log]
    first_other = next(i for i, rid in enumerate(order) if rid not in probes)
    assert set(order[:first_other]) == probes  # every group's probe ran before any other request
    # ...and while any probe has chunks left, every decision picks a probe
    last_probe = max(i for i, rid in enumerate(order) if rid in probes)
    assert all(rid in probes for rid in order[:last_probe + 1])


def test_a_new_request_of_a_long_group_runs_while_a_started_one_of_a_short_group_waits():
    # group 0 is known short (its probe finished at 3 tokens); group 1 is unknown (= max_tokens).
    groups = make_groups([[1], [2]], 2, 50, 0)
    p = SeerPolicy(chunk_tokens=4)
    p.reset(groups, [1], KVBudget([10_000], 1))
    g0p, g0r, g1p, g1r = groups[0][0], groups[0][1], groups[1][0], groups[1][1]
    (d,) = p.next_dispatches()
    assert d.request is g0p
    g0p.add_chunk(0, [0, 1, 2], "stop", 0, 1)  # group 0's estimate is now 3 tokens
    p.on_chunk_done(g0p, 0)
    (d,) = p.next_dispatches()
    assert d.request is g1p  # the other probe first
    g1p.add_chunk(0, [0, 1, 2, 3], "length", 1, 2)
    p.on_chunk_done(g1p, 0)
    (d,) = p.next_dispatches()
    assert d.request is g1p  # probes before everything, fewest generated first
    g1p.add_chunk(0, [4, 5, 6, 7], "length", 2, 3)
    p.on_chunk_done(g1p, 0)
    # Now make g0's second request a started one ...
    p.speculative.discard(g1p.request_id)  # (treat g1's probe as done probing)
    (d,) = p.next_dispatches()
    assert d.request is g1p  # estimate floor: it has generated 8 of an unknown (= 50) group
    g1p.add_chunk(0, [8, 9, 10, 11], "length", 3, 4)
    p.on_chunk_done(g1p, 0)
    p.speculative.discard(g1p.request_id)
    # a started request of the short group vs the new request of the long group:
    g0r.output_token_ids = [0]  # started (as if one chunk ran)
    p._push(g0r)
    (d,) = p.next_dispatches()
    assert d.request in (g1p, g1r) and d.request.group_id == 1  # the long group goes first


def test_a_parked_request_keeps_its_kv_and_its_next_chunk_runs_there():
    groups = make_groups([[1] * 5], 2, 30, 0)
    true_len = {"g0-r0": 30, "g0-r1": 30}
    log = kv_rollout(SeerPolicy(chunk_tokens=8), groups, [2, 2], KVBudget([1000, 1000], 1), true_len)
    by_req = {}
    for rid, inst, _, resident in log:
        by_req.setdefault(rid, []).append((inst, resident))
    for chunks in by_req.values():
        assert len({i for i, _ in chunks}) == 1  # affinity: one instance
        assert [res for _, res in chunks] == [False] + [True] * (len(chunks) - 1)


def _first_instances(policy, groups, slots, kv, true_len):
    return {rid: inst for rid, inst, *_ in reversed(kv_rollout(policy, groups, slots, kv, true_len))}


def test_balance_moves_parked_requests_to_an_instance_that_holds_spread_fewer():
    # 8 requests over two instances, 4 each; those on instance 1 end after one chunk, those on
    # instance 0 run on. With balance_spread=2, instance 0 sheds parked requests to instance 1
    # until they hold fewer than 2 apart; without it every request stays where it started.
    def setup():
        return make_groups([[1] * 5], 8, 40, 0)
    kv = KVBudget([10_000, 10_000], 1)
    first = _first_instances(SeerPolicy(chunk_tokens=4), setup(), [4, 4], kv, {f"g0-r{i}": 40 for i in range(8)})
    assert sorted(first.values()) == [0] * 4 + [1] * 4
    true_len = {rid: 40 if inst == 0 else 4 for rid, inst in first.items()}
    still = SeerPolicy(chunk_tokens=4)
    log = kv_rollout(still, setup(), [4, 4], kv, true_len)
    assert still.migrations == 0 and {inst for rid, inst, *_ in log if first[rid] == 0} == {0}

    def bounded(policy):  # after each round: no instance idles while another holds 2 more parked
        on = policy.ledger.on
        if policy.outstanding and not policy.running[1] and policy.ledger.n_parked[0]:
            assert len(on[0]) - len(on[1]) < 2
    moving = SeerPolicy(chunk_tokens=4, balance_spread=2)
    log = kv_rollout(moving, setup(), [4, 4], kv, true_len, bounded)
    moved = {rid for rid, inst, *_ in log if first[rid] == 0 and inst == 1}
    assert len(moved) == moving.migrations == 2  # 4 vs 0 -> 2 vs 2, then balanced


def test_with_a_global_kv_pool_parked_requests_balance_by_default():
    # as above, but parked KV lives in a shared pool: a move costs nothing, so without any
    # balance_spread the long requests spread over both instances once instance 1 empties
    groups = make_groups([[1] * 5], 8, 40, 0)
    kv = KVBudget([10_000, 10_000], 1, shared_kv=True)
    first = _first_instances(SeerPolicy(chunk_tokens=4), make_groups([[1] * 5], 8, 40, 0), [4, 4], kv,
                             {f"g0-r{i}": 40 for i in range(8)})
    true_len = {rid: 40 if inst == 0 else 4 for rid, inst in first.items()}
    pooled = SeerPolicy(chunk_tokens=4)
    log = kv_rollout(pooled, groups, [4, 4], kv, true_len)
    assert pooled.spread == 1 and {inst for rid, inst, *_ in log if first[rid] == 0} == {0, 1}
    assert SeerPolicy(chunk_tokens=4, balance_spread=3).balance_spread == 3  # an explicit spread stays
    off = SeerPolicy(chunk_tokens=4, balance_spread=0)  # 0 turns it off, even over a shared pool
    log = kv_rollout(off, make_groups([[1] * 5], 8, 40, 0), [4, 4], kv, true_len)
    assert off.spread is None and {inst for rid, inst, *_ in log if first[rid] == 0} == {0}


def test_a_new_request_starts_where_its_group_prompt_is_held_while_it_fits():
    # Two groups of 4 with 16-token prompts (4 blocks of 4) on two instances with ample slots.
    # Their probes go to different instances; with group affinity every request follows its
    # probe, so each instance holds one group's prompt blocks. Without it the most-free rule
    # alternates and both instances hold both prompts.
    def first(policy, kv):
        groups = make_groups([[1] * 16, [2] * 16], 4, 8, 0)
        return _first_instances(policy, groups, [8, 8], kv, {f"g{g}-r{i}": 8 for g in (0, 1) for i in range(4)})
    roomy = KVBudget([400, 400], 4)
    together = first(SeerPolicy(chunk_tokens=8), roomy)
    assert {together[f"g0-r{i}"] for i in range(4)} != {together[f"g1-r{i}"] for i in range(4)}
    assert all(len({together[f"g{g}-r{i}"] for i in range(4)}) == 1 for g in (0, 1))
    spread = first(SeerPolicy(chunk_tokens=8, group_affinity=False), roomy)
    assert all(len({spread[f"g{g}-r{i}"] for i in range(4)}) == 2 for g in (0, 1))
    # Where the group's instance has no room for another chunk, the request goes elsewhere.
    for capacity, want in ((400, 0), (24, 1)):  # 24 tokens: the prompt's 4 blocks + one chunk's 2
        p = SeerPolicy(chunk_tokens=8, growth_reserve=False)
        groups = make_groups([[1] * 16], 2, 8, 0)
        p.reset(groups, [8, 8], KVBudget([capacity, 800], 4))
        p.ledger.start(groups[0][0], 0, 8)
        assert p._place_fresh(groups[0][1]) == want


def test_work_placement_starts_a_new_request_where_the_least_expected_decode_work_is_resident():
    # One group of 3 whose probe (r0) started on instance 0. Group affinity alone sends r1
    # there too; with work_placement r1 goes to instance 1 (no resident work), and r2 to
    # whichever instance has less left to decode once r0 has generated some tokens.
    def setup(**kw):
        p = SeerPolicy(chunk_tokens=8, growth_reserve=False, **kw)
        groups = make_groups([[1] * 16], 3, 40, 0)
        p.reset(groups, [8, 8], KVBudget([800, 800], 4))
        p.ledger.start(groups[0][0], 0, 8)
        return p, groups[0]
    p, g = setup()
    assert p._place_fresh(g[1]) == 0
    p, g = setup(work_placement=True)
    assert p._work(0) == 40 and p._work(1) == 0
    assert p._place_fresh(g[1]) == 1
    p.ledger.start(g[1], 1, 8)
    assert p._work(1) == 40
    # generated tokens lower the work: r0 decoded 8 of its (unknown: max_tokens) 40
    g[0].add_chunk(0, list(range(8)), "length", 0.0, 1.0)
    p.ledger.chunk_done(g[0])
    assert p._work(0) == 32 and p._place_fresh(g[2]) == 0


def test_a_full_instance_gives_up_the_lowest_ranked_parked_kv_and_counts_it():
    # One instance whose KV holds two started requests but not their growth.
    groups = make_groups([[1] * 4, [2] * 4], 1, 40, 0)
    p = SeerPolicy(chunk_tokens=8)
    log = kv_rollout(p, groups, [4], KVBudget([4 + 4 + 8 + 8 + 30], 1), {"g0-r0": 40, "g1-r0": 40}, within_capacity)
    assert p.ledger.given_up >= 1 and p.ledger.given_up_tokens > 0
    assert [rid for rid, *_ in log].count("g0-r0") >= 5


def test_the_adaptive_reserve_turns_to_estimates_after_a_give_up_and_keeps_that_across_rollouts():
    # As above: without a reserve for growth the two requests overfill the KV and one gives up.
    kv, true_len = KVBudget([4 + 4 + 8 + 8 + 30], 1), {"g0-r0": 40, "g1-r0": 40}
    p = SeerPolicy(chunk_tokens=8, growth_reserve="adaptive")
    kv_rollout(p, make_groups([[1] * 4, [2] * 4], 1, 40, 0), [4], kv, true_len, within_capacity)
    assert p.ledger.given_up >= 1 and p.tight == {0}
    kv_rollout(p, make_groups([[1] * 4, [2] * 4], 1, 40, 0), [4], kv, true_len, within_capacity)
    assert p.ledger.given_up == 0  # the estimate reserve admits the second only when the first's growth fits


def test_shared_prompt_blocks_are_held_once_per_group_and_instance():
    led = KVLedger(KVBudget([100], 4))
    a, b = make_groups([[1] * 8], 2, 10, 0)[0]  # prompt = 2 full blocks
    led.start(a, 0, 4)
    assert led.used[0] == 3  # 2 prompt blocks + 1 block of growth
    assert led.need(b, 0, 4) == 1  # the prompt blocks are there already
    led.start(b, 0, 4)
    assert led.used[0] == 4
    a.output_token_ids = [0] * 4
    a.status = a.status.CLIPPED
    led.chunk_done(a)
    assert led.used[0] == 3
    led.release(b.request_id)
    assert led.used[0] == 0 and not led.group_refs[0]


def test_a_chunk_that_does_not_fit_is_refused():
    led = KVLedger(KVBudget([8], 4))
    (r,) = make_groups([[1] * 8], 1, 10, 0)[0]
    with pytest.raises(ValueError, match="KV blocks needed"):
        led.start(r, 0, 4)


def test_seer_refuses_a_request_longer_than_an_instance_kv_cache():
    groups = make_groups([[1] * 10], 1, 100, 0)
    with pytest.raises(ValueError, match="more than an instance's KV cache"):
        SeerPolicy().reset(groups, [1], KVBudget([64], 16))


def test_oracle_with_a_kv_budget_reserves_true_lengths():
    groups = make_groups([[1] * 4], 4, 50, 0)
    lengths = {"g0-r0": 50, "g0-r1": 10, "g0-r2": 30, "g0-r3": 20}
    p = make_policy("oracle-lfs", lengths=lengths, engine=False)
    p.reset(groups, [8], KVBudget([100], 1))
    first = [d.request.request_id for d in p.next_dispatches()]
    assert first == ["g0-r0", "g0-r2"]  # 54 + 34 tokens fit in 100; the next (24) must wait


def test_the_lpt_oracle_submits_longest_first_balancing_true_tokens():
    groups = make_groups([[1] * 4], 4, 50, 0)
    lengths = {"g0-r0": 50, "g0-r1": 10, "g0-r2": 30, "g0-r3": 25}
    p = make_policy("oracle-lfs", lengths=lengths)
    p.reset(groups, [1 << 30] * 2)
    plan = [(d.request.request_id, d.instance) for d in p.next_dispatches()]
    assert plan == [("g0-r0", 0), ("g0-r1", 0), ("g0-r2", 1), ("g0-r3", 1)]  # loads 50+10 | 30+25


def test_kv_the_ledger_drops_reaches_that_instance_with_its_next_chunk_once():
    # The give-up case above: every given-up request is named once, in a later chunk sent
    # to the instance that held it (the engine then evicts its blocks first).
    groups = make_groups([[1] * 4, [2] * 4], 1, 40, 0)
    p = SeerPolicy(chunk_tokens=8)
    released: list[str] = []
    original = p._start

    def spy(request, instance, max_tokens, kv_resident=None):
        d = original(request, instance, max_tokens, kv_resident)
        assert d.request.request_id not in d.kv_release  # never the chunk's own request
        released.extend(d.kv_release)
        return d

    p._start = spy
    kv_rollout(p, groups, [4], KVBudget([4 + 4 + 8 + 8 + 30], 1), {"g0-r0": 40, "g1-r0": 40})
    assert p.ledger.given_up >= 1
    assert len(released) == p.ledger.given_up and not any(p.ledger.dropped)


def test_a_move_to_another_instance_releases_the_kv_left_behind():
    led = KVLedger(KVBudget([100, 100], 4))
    (a,) = make_groups([[1] * 8], 1, 40, 0)[0]
    led.start(a, 0, 4)
    a.output_token_ids = [0] * 4
    led.chunk_done(a)
    assert led.take_dropped(0) == ()
    assert led.start(a, 1, 4)  # moved
    assert led.take_dropped(0) == (a.request_id,) and led.take_dropped(0) == ()
    assert led.take_dropped(1) == ()


def _evicting_oracle(lengths_by_group, cap_blocks, reserve, max_tokens):
    """One instance of ``cap_blocks`` 16-token blocks; one request per group, 32-token prompts."""
    groups = make_groups([[1] * 32 for _ in lengths_by_group], 1, max_tokens, 0)
    lengths = {g[0].request_id: n for g, n in zip(groups, lengths_by_group)}
    p = make_policy("seer-oracle", lengths=lengths, chunk_tokens=16, kv_block_tokens=16, growth_reserve=reserve,
                    fresh_evicts=True)
    p.reset(groups, [8], KVBudget([cap_blocks * 16], 16))
    return p, [g[0] for g in groups]


def _run_one_chunk_and_park(p, r):
    d = p._dispatch(p._pop((p._key(r), p.entry[r.request_id], r)), 0)
    r.add_chunk(0, [7] * d.max_tokens, "length", 0.0, 1.0)
    p.on_chunk_done(r, 0)


def test_a_new_request_gives_up_only_the_parked_kv_it_needs_counting_freed_prompts():
    # three short requests parked, each the last of its group there (2 prompt blocks + 1 of
    # its own): giving up the lowest frees 3 blocks, all the longer new request needs
    p, (b, c, d, new) = _evicting_oracle([3, 3, 3, 50], 9, False, 60)
    for r in (b, c, d):
        _run_one_chunk_and_park(p, r)
    assert p.ledger.free(0) == 0 and p._place_fresh(new) is None
    assert p._evict_for_fresh((p._key(new), p.entry[new.request_id], new)) == 0
    assert p.ledger.given_up == 1 and p.ledger.fits(new, 0, p.chunk_budget(new), p._reserve(0))


def test_an_adaptive_instance_gives_up_nothing_where_the_reserve_it_turns_to_leaves_no_room():
    # giving up the short parked request would make the instance tight: its reserve becomes the
    # long resident's expected growth, which leaves no room for the new request's chunk
    p, (long_, short, new) = _evicting_oracle([100, 3, 50], 9, "adaptive", 100)
    for r in (long_, short):
        _run_one_chunk_and_park(p, r)
    assert p._place_fresh(new) is None
    assert p._evict_for_fresh((p._key(new), p.entry[new.request_id], new)) is None
    assert p.ledger.given_up == 0 and not p.tight
