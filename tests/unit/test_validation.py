"""Validation between iterations: when it runs and what it logs (pure logic, and its reward
errors through a real reward pool; the run through the platform is
tests/integration/test_run_faults.py)."""
from types import SimpleNamespace

from umbra.data.problem import Problem
from umbra.data.source import PromptItem
from umbra.job.validation import Validator, validation_metrics
from umbra.rewards.score import TRAIN_ERRORS, Scorer
from umbra.rollout.manager import RolloutShape


def test_validation_is_due_every_n_iterations_and_at_the_last():
    v = Validator([object()], every=3, samples=1, temperature=0.0, iterations=8, seed=0, policy=None, score=None)
    assert [it for it in range(8) if v.due(it)] == [2, 5, 7]
    never = Validator([object()], every=0, samples=1, temperature=0.0, iterations=8, seed=0, policy=None, score=None)
    assert not any(never.due(it) for it in range(8))
    empty = Validator([], every=1, samples=1, temperature=0.0, iterations=8, seed=0, policy=None, score=None)
    assert not empty.due(0)


def test_validation_before_train_takes_step_0_and_not_on_a_resume():
    v = Validator([object()], every=1, samples=1, temperature=0.0, iterations=4, seed=0, policy=None, score=None,
                  before_train=True)
    assert v.due_before(0) and not v.due_before(2)  # a resumed run validated its initial weights already
    assert [it for it in range(4) if v.due(it)] == [1, 2, 3]  # step 0 holds the initial weights' values
    plain = Validator([object()], every=1, samples=1, temperature=0.0, iterations=4, seed=0, policy=None, score=None)
    assert not plain.due_before(0) and plain.due(0)


def test_validation_before_train_needs_a_validation_set():
    import pytest
    from pydantic import ValidationError

    from umbra.config import RunConfig

    with pytest.raises(ValidationError, match="needs a validation set"):
        RunConfig(val_before_train=True)
    assert RunConfig(val_before_train=True, dataset="arith-easy", val_fraction=0.25).val_before_train


def test_validation_before_train_on_a_one_iteration_run_would_share_step_0_and_is_refused():
    """Iteration 0 is not validated after its update when val_before_train takes step 0; in a
    1-iteration run that was the last validation, which the run would then silently lack."""
    import pytest
    from pydantic import ValidationError

    from umbra.config import RunConfig

    with pytest.raises(ValidationError, match="a run of 1 iteration logs both"):
        RunConfig(val_before_train=True, val_every=1, iterations=1, val_fraction=0.25)
    initial_only = RunConfig(val_before_train=True, val_every=0, iterations=1, val_fraction=0.25)
    v = Validator([object()], every=initial_only.val_every, samples=1, temperature=0.0, iterations=1, seed=0,
                  policy=None, score=None, before_train=True)
    assert v.due_before(0) and not v.due(0)
    assert RunConfig(val_every=1, iterations=1, val_fraction=0.25).iterations == 1  # no step-0 validation: fine


def test_metrics_count_rewards_over_half_as_correct():
    samples = [SimpleNamespace(reward=r, response_token_ids=[0] * n) for r, n in ((1.0, 4), (0.5, 2), (0.0, 6), (0.9, 4))]
    assert validation_metrics(samples) == {"val/accuracy": 0.5, "val/reward_mean": 0.6,
                                           "val/response_len/mean": 4.0}


VAL_REWARD = '''
import time
def compute_score(data_source, solution_str, ground_truth, extra_info):
    if solution_str == "raise":
        raise ValueError("validation reward bug")
    if solution_str == "sleep":
        time.sleep(60)
    return float(solution_str == ground_truth)
'''


class _Rollout:
    """Stands in for the rollout manager (no engines here): one response per prompt, each the
    token ids of a given text; the reward pool that scores them is real."""

    shape = RolloutShape(group_size=4, max_tokens=8, temperature=1.0, max_model_len=64, max_num_seqs=4,
                         capacity=4, kv_cache_gib=1)

    def __init__(self, texts):
        self.texts = texts

    def generate(self, iteration, prompts, seed, policy, shape):
        assert shape.group_size == 1 and shape.temperature == 0.0 and len(prompts) == len(self.texts)
        return SimpleNamespace(events=[], samples=[SimpleNamespace(group_id=i, response_token_ids=[ord(c) for c in t])
                                                   for i, t in enumerate(self.texts)])


class _Tokenizer:
    def batch_decode(self, ids, skip_special_tokens=True):
        return ["".join(map(chr, one)) for one in ids]


def test_validation_counts_its_reward_errors_apart_and_notes_each_once(tmp_path):
    """A validation reward that raises or times out is counted as val/reward_errors (not in the
    training's reward/errors) and noted once per distinct error, as the run loop wires it."""
    path = tmp_path / "val_reward.py"
    path.write_text(VAL_REWARD)
    scorer = Scorer(f"{path}:compute_score", timeout_s=2.0, workers=2)
    problem = Problem(question="q", answer="7", data_source="unit")
    items = [PromptItem(problem, [1, 2])] * 4

    def score(batch, problems, errors_metric=TRAIN_ERRORS):  # umbra.job.loop's reward path
        return scorer.score_batch(batch, problems, _Tokenizer(), errors_metric)

    validator = Validator(items, every=1, samples=1, temperature=0.0, iterations=2, seed=0, policy=None, score=score)
    try:
        _, train = scorer.score_texts(["raise", "7"], [problem] * 2)  # training met the same bug first
        train_notes = scorer.take_notes()
        first, _ = validator.run(_Rollout(["7", "raise", "sleep", "8"]), 0)
        val_notes = scorer.take_notes()
        again, _ = validator.run(_Rollout(["raise", "raise", "7", "sleep"]), 1)
        later_notes = scorer.take_notes()
    finally:
        scorer.close()
    assert train["reward/errors"] == 1 and len(train_notes) == 1 and "counted in reward/errors" in train_notes[0]
    assert first["val/reward_errors"] == 2.0 and first["val/accuracy"] == 0.25 and "reward/errors" not in first
    assert again["val/reward_errors"] == 3.0 and again["val/accuracy"] == 0.25
    assert len(val_notes) == 2 and all(n.startswith("validation reward error") for n in val_notes)
    assert all("counted in val/reward_errors" in n for n in val_notes)
    joined = "\n".join(val_notes)
    assert "ValueError: validation reward bug" in joined and 'raise ValueError("validation reward bug")' in joined
    assert "timed out after 2 s" in joined
    assert later_notes == []  # the same errors again: only counted
