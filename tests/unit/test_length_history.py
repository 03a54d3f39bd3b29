"""Length history (ours, beyond Seer): a prompt seen before primes its group's estimate."""
import pytest

from umbra.rollout.policies import SeerPolicy
from umbra.rollout.policies.length_history import LengthHistory
from umbra.rollout.request import make_groups


def finish(r, n):
    r.add_chunk(0, list(range(n)), "stop", 0.0, 1.0)


def test_history_keeps_the_most_recent_lengths_per_prompt_and_bounds_prompts():
    h = LengthHistory(keep=2, max_prompts=2)
    (a1, a2, a3), = make_groups([[5, 6]], 3, 100, 0)
    assert h.prior(a1) is None
    for r, n in ((a1, 40), (a2, 10), (a3, 20)):
        finish(r, n)
        h.record(r)
    assert h.prior(a1) == 20  # 40 fell out: only the 2 most recent (10, 20) are kept
    (b,), (c,) = make_groups([[7], [8]], 1, 100, 0)
    for r in (b, c):
        finish(r, 3)
        h.record(r)
    assert len(h) == 2 and h.prior(a1) is None  # the least recently recorded prompt went first
    with pytest.raises(ValueError):
        LengthHistory(keep=0)


def test_seer_with_history_ranks_a_group_long_last_time_first_from_the_start():
    def first_round(policy):
        # one instance, 3 slots: both probes, then the best non-probe request
        groups = make_groups([[1, 1], [2, 2]], 2, 100, 0)
        policy.reset(groups, [3])
        return [d.request.request_id for d in policy.next_dispatches()], groups

    plain = SeerPolicy(chunk_tokens=100)
    assert first_round(plain)[0] == ["g0-r0", "g1-r0", "g0-r1"]  # no estimates yet: first come
    hist = SeerPolicy(chunk_tokens=100, length_history=True)
    _, groups = first_round(hist)
    for d_id, n in (("g0-r0", 5), ("g1-r0", 90), ("g0-r1", 4)):  # the three dispatched ones finish
        r = next(r for g in groups for r in g if r.request_id == d_id)
        finish(r, n)
        hist.on_chunk_done(r, 0)
    assert hist.estimate == {0: 5, 1: 90}
    order, _ = first_round(hist)  # the same prompts again (a new epoch)
    assert hist.estimate == {0: 5, 1: 90}  # primed by the history
    assert order == ["g0-r0", "g1-r0", "g1-r1"]  # g1 was long last time
