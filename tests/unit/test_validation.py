"""Validation between iterations: when it runs and what it logs (pure logic; the run through
the platform is tests/integration/test_run_faults.py)."""
from types import SimpleNamespace

from umbra.job.validation import Validator, validation_metrics


def test_validation_is_due_every_n_iterations_and_at_the_last():
    v = Validator([object()], every=3, samples=1, temperature=0.0, iterations=8, seed=0, policy=None, score=None)
    assert [it for it in range(8) if v.due(it)] == [2, 5, 7]
    never = Validator([object()], every=0, samples=1, temperature=0.0, iterations=8, seed=0, policy=None, score=None)
    assert not any(never.due(it) for it in range(8))
    empty = Validator([], every=1, samples=1, temperature=0.0, iterations=8, seed=0, policy=None, score=None)
    assert not empty.due(0)


def test_metrics_count_rewards_over_half_as_correct():
    samples = [SimpleNamespace(reward=r, response_token_ids=[0] * n) for r, n in ((1.0, 4), (0.5, 2), (0.0, 6), (0.9, 4))]
    assert validation_metrics(samples) == {"val/accuracy": 0.5, "val/reward_mean": 0.6,
                                           "val/response_len/mean": 4.0}
