"""The per-token draft budget (ours): suffix-count support, its calibration on verdicts, the
allocation of draft tokens over rows, and the proposer that drafts with it."""
import itertools
from types import SimpleNamespace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from umbra.speculative.draft_budget import DraftConfidence, allocate, chain
from umbra.speculative.proposer import TokenBudgetProposer
from umbra.speculative.suffix_index import SuffixIndex


def test_support_counts_the_paths_that_agree_at_each_draft_token():
    idx = SuffixIndex(8)
    for k, tail in enumerate(([5, 6, 7], [5, 6, 7], [5, 6, 8], [5, 9, 9])):
        idx.extend(f"r{k}", [1, 2, 3, 4] + tail)
    got = idx.propose_scored([3, 4], 4, min_match=2)
    # 4 paths after "3 4": all say 5; of those 3 say 6; of those 2 say 7; then nothing follows
    assert got == [(5, 4, 4), (6, 3, 4), (7, 2, 3)]
    assert idx.propose([3, 4], 4, min_match=2) == [5, 6, 7]


def test_confidence_starts_at_the_score_and_learns_the_verdicts():
    c = DraftConfidence(bins=10, weight=4.0, decay=1.0)
    strong, weak = c.bin(7, 7), c.bin(1, 1)
    assert (strong, weak) == (8, 5) and c.rate(strong) == 0.85 and c.rate(weak) == 0.55
    for _ in range(40):  # strong drafts: the first two tokens held, the third was rejected
        c.update([strong, strong, strong, strong], 2)
    # every first and second token held, every third failed, fourths were never judged
    assert abs(c.rate(strong) - (80 + 3.4) / (120 + 4)) < 1e-9
    c.update([weak], 0)
    assert c.rate(weak) < 0.55


def test_chain_multiplies_the_acceptance_of_the_tokens_before():
    assert chain([0.9, 0.5, 1.0]) == [0.9, 0.45, 0.45]


def test_a_confident_row_drafts_far_while_a_doubtful_one_drafts_nothing():
    # step 0.1 s for 8 rows, a draft token 4 ms: a token pays while Q > tokens * 0.004 / seconds
    lengths = allocate([chain([0.95] * 8), chain([0.3] * 8), []], rows=8, c_step=0.1, c_draft=0.004)
    assert lengths[0] >= 4 and lengths[1] == 0 and lengths[2] == 0
    # where a verified draft token costs as much as a step moves every row, nothing pays
    assert allocate([chain([0.99] * 8)], rows=8, c_step=0.1, c_draft=0.0125) == [0]
    assert allocate([chain([1.0] * 8)], rows=1, c_step=0.1, c_draft=0.001, gamma_max=3) == [3]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.floats(0.05, 1.0), min_size=0, max_size=3), min_size=1, max_size=4),
       st.integers(1, 16), st.floats(0.01, 0.3), st.floats(0.0005, 0.02))
def test_allocation_maximises_expected_tokens_per_second(rates, rows, c_step, c_draft):
    """Against every choice of draft prefix per row: none gives more tokens per second."""
    chains = [chain(r) for r in rates]
    got = allocate(chains, rows, c_step, c_draft)
    assert all(0 <= g <= len(c) for g, c in zip(got, chains))

    def speed(lengths):
        return (rows + sum(sum(c[:g]) for c, g in zip(chains, lengths))) / (c_step + c_draft * sum(lengths))

    best = max(speed(ls) for ls in itertools.product(*[range(len(c) + 1) for c in chains]))
    assert speed(got) >= best * (1 - 1e-9)


def _proposer(gamma_max=8):
    prop = TokenBudgetProposer(gamma_max=gamma_max)
    prop.cost.c0, prop.cost.c_row, prop.cost.c_draft = 0.1, 0.004, 0.004  # this CPU's order of magnitude
    prop.cost.n = 8  # as after 8 steps without drafts
    return prop


def test_the_proposer_drafts_where_the_group_agrees_and_not_where_it_splits():
    prop = _proposer()
    agree = [10, 11, 12, 13, 14, 15, 16, 17, 18, 19]
    prop.replica.apply(1, [1, 2], [(f"g1-r{k}", agree) for k in range(7)])
    prop.replica.apply(2, [1, 3], [(f"g2-r{k}", [10, 11, 12, 30 + k, 40 + k]) for k in range(7)])
    prop.bind(SimpleNamespace(req_ids=["g1-r7-0-v0-a", "g2-r7-0-v0-b"]))
    buf = np.zeros((2, 32), dtype=np.int64)
    buf[0, :5] = [1, 2, 10, 11, 12]
    buf[1, :5] = [1, 3, 10, 11, 12]
    drafts = prop.propose([[12], [12]], np.array([5, 5]), buf)
    assert drafts[0][:4] == [13, 14, 15, 16] and drafts[1] == []
    # the verdict on row 0 (2 accepted, then rejected) reaches the calibration and the per-position rates
    buf[0, 5:8] = [13, 14, 99]
    prop.confidence.decay = 1.0
    prop.propose([[13, 14, 99], [31]], np.array([8, 6]), buf)
    assert sum(prop.confidence.trials) == 3 and sum(prop.confidence.hits) == 2
    assert prop.stats.rate[2] < 0.6 < prop.stats.rate[0]


def test_the_proposer_does_no_per_row_work_where_no_draft_token_can_pay():
    prop = _proposer()
    prop.cost.c_draft = 0.2  # a draft token dearer than the whole step
    prop.replica.apply(1, [1, 2], [("g1-r0", [10, 11, 12, 13])])
    prop.replica.suffix_index = None  # would raise if called
    buf = np.zeros((1, 8), dtype=np.int64)
    buf[0, :3] = [1, 2, 10]
    assert prop.propose([[10]], np.array([3]), buf) == [[]]


def test_the_proposer_leaves_steps_without_drafts_for_the_base_cost_fit():
    """No draft before the fit of c0 and c_row has 8 steps without drafts, then none on every
    8th step, however confident the rows."""
    prop = _proposer()
    prop.cost.n = 0
    prop.replica.apply(1, [1, 2], [(f"g1-r{k}", list(range(10, 40))) for k in range(7)])
    buf = np.zeros((1, 64), dtype=np.int64)
    buf[0, :5] = [1, 2, 10, 11, 12]
    prop.bind(SimpleNamespace(req_ids=["g1-r7-0-v0-a"]))
    assert prop.propose([[12]], np.array([5]), buf) == [[]]
    prop.cost.n = 8
    drafted = []
    for _ in range(16):
        prop.last.clear()
        drafted.append(bool(prop.propose([[12]], np.array([5]), buf)[0]))
    assert drafted.count(False) == 2 and drafted[7] is False and drafted[15] is False
