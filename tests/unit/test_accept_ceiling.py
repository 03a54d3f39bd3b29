"""The best token drafter's tokens per step (umbra bench accept-ceiling) and its use as
spec-bound's acceptance profile."""
import pytest

from umbra.bench.accept_ceiling import equivalent_rate, expected_tokens
from umbra.bench.spec_bound import shrink

COST = {"c0_s": 0.1, "row_s": 0.004, "draft_s": 0.007}


def test_expected_tokens_multiplies_pmax_along_the_response_and_rejects_past_its_end():
    e = expected_tokens([[0.5, 0.5, 0.5]], gamma_max=2)
    # t=0: drafts at 1, 2 -> 1 + .5 + .25; t=1: 1 + .5 + 0; t=2: 1 + 0 + 0 (past the end)
    assert e[0] == 1.0
    assert e[1] == pytest.approx((1.5 + 1.5 + 1.0) / 3)
    assert e[2] == pytest.approx((1.75 + 1.5 + 1.0) / 3)
    assert expected_tokens([[1.0] * 20], gamma_max=8)[8] == pytest.approx(sum(min(8, 19 - t) + 1 for t in range(20)) / 20)
    assert expected_tokens([]) == [1.0] * 9


def test_clustered_certainty_gives_more_than_its_mean_rate():
    clustered = expected_tokens([[1.0] * 50 + [0.2] * 50], gamma_max=8)
    spread = expected_tokens([[0.6] * 100], gamma_max=8)  # the same mean p_max
    assert clustered[8] > spread[8]


def test_equivalent_rate_inverts_the_geometric_sum():
    assert equivalent_rate(sum(0.7 ** k for k in range(9)), 8) == pytest.approx(0.7, abs=1e-9)
    assert equivalent_rate(1.0, 8) == pytest.approx(0.0, abs=1e-9)


def test_spec_bound_takes_a_profile_in_place_of_a_rate():
    rate = 0.8
    profile = [sum(rate ** k for k in range(g + 1)) for g in range(9)]
    assert shrink(1, COST, 8, profile) == pytest.approx(shrink(1, COST, 8, rate))
    assert shrink(1, COST, 8, [1.0] * 9) == (1.0, 0)  # nothing accepted: never draft
    assert shrink(1, COST, 8, profile[:3])[1] <= 2  # no longer drafts than the profile covers


def test_a_selective_drafter_beats_one_draft_length_where_certainty_clusters():
    """Half the positions certain, half doubtful: drafting only the certain ones shrinks a step
    more than the best single draft length, which averages both."""
    from umbra.bench.spec_bound import shrink_selective

    clustered = [[1.0] * 40 + [0.1] * 40 for _ in range(4)]
    for rows in (1, 4, 16):
        uniform = shrink(rows, COST, 8, expected_tokens(clustered))[0]
        selective, drafted = shrink_selective(rows, COST, 8, clustered)
        assert selective < uniform and drafted > 0
    # at 64 rows a step moves a token every 5.6 ms and a sure draft token costs 7: nothing pays
    assert shrink_selective(64, COST, 8, clustered) == (pytest.approx(1.0), 0.0)
    assert shrink_selective(8, COST, 8, [[0.0] * 50]) == (pytest.approx(1.0), 0.0)  # nothing certain

