"""Custom rewards in the reward pool (umbra.rewards.pool / score): real spawned processes.
A reward that raises, hangs past the timeout, or returns NaN or a string scores 0, is counted in
reward/errors and noted once per distinct error; the pool goes on scoring."""
from __future__ import annotations

import time

import pytest

from umbra.data.problem import Problem
from umbra.rewards.score import Scorer

REWARDS = '''
import time
def good(data_source, solution_str, ground_truth, extra_info):
    return {"score": float(solution_str == ground_truth), "Format ok": 0.5, "label": "x", "bad": float("nan")}
def flaky(data_source, solution_str, ground_truth, extra_info):
    if solution_str == "raise":
        raise RuntimeError("reward bug")
    if solution_str == "sleep":
        time.sleep(60)
    if solution_str == "nan":
        return float("nan")
    if solution_str == "text":
        return "1.0"
    if solution_str == "nodict":
        return {"value": 1.0}
    return 1.0
'''
PROBLEM = Problem(question="q", answer="7", data_source="unit", extra_info={"k": [1, 2]})


@pytest.fixture
def reward_file(tmp_path):
    path = tmp_path / "rewards.py"
    path.write_text(REWARDS)
    return path


def _scorer(path, name, timeout_s=30.0):
    return Scorer(f"{path}:{name}", timeout_s=timeout_s, workers=2)


def test_a_dict_result_gives_the_score_and_its_extra_numbers(reward_file):
    scorer = _scorer(reward_file, "good")
    try:
        rewards, metrics = scorer.score_texts(["7", "8", "7"], [PROBLEM] * 3)
    finally:
        scorer.close()
    assert rewards == [1.0, 0.0, 1.0]
    assert metrics == {"reward/errors": 0.0, "reward/extra/format_ok": 0.5}  # non-numbers left out
    assert scorer.take_notes() == []


def test_bad_calls_score_0_are_counted_and_noted_once_each(reward_file):
    scorer = _scorer(reward_file, "flaky", timeout_s=2.0)
    try:
        t0 = time.monotonic()
        texts = ["ok", "raise", "sleep", "nan", "text", "nodict", "raise", "ok"]
        rewards, metrics = scorer.score_texts(texts, [PROBLEM] * len(texts))
        took = time.monotonic() - t0
        notes = scorer.take_notes()
        again, metrics2 = scorer.score_texts(["raise", "ok", "sleep"], [PROBLEM] * 3)  # the pool still works
    finally:
        scorer.close()
    assert rewards == [1.0, 0, 0, 0, 0, 0, 0, 1.0] and metrics["reward/errors"] == 6
    assert took < 30  # the hung call was stopped, not waited for (60 s)
    joined = "\n".join(notes)
    assert len(notes) == 5  # raise (twice: one note), timeout, nan, str, dict without score
    assert "RuntimeError: reward bug" in joined and 'raise RuntimeError("reward bug")' in joined  # traceback lines
    assert "timed out after 2 s" in joined and "nan" in joined and "str" in joined and "'score'" in joined
    assert all(len(n) <= 1000 for n in notes)
    assert again == [0.0, 1.0, 0.0] and metrics2["reward/errors"] == 2 and scorer.take_notes() == []


def test_a_reward_file_that_fails_to_load_scores_0_and_says_why(tmp_path):
    path = tmp_path / "broken.py"
    path.write_text("def compute_score(*a):\n    return 1.0\nraise ImportError('no such library: foo')\n")
    scorer = Scorer(f"{path}:compute_score", timeout_s=5.0, workers=1)
    try:
        rewards, metrics = scorer.score_texts(["a", "b"], [PROBLEM] * 2)
    finally:
        scorer.close()
    assert rewards == [0.0, 0.0] and metrics["reward/errors"] == 2
    (note,) = scorer.take_notes()
    assert "no such library: foo" in note


def test_a_builtin_reward_runs_in_the_pool_with_math_verify():
    scorer = Scorer("math", timeout_s=10.0, workers=1)
    try:
        rewards, metrics = scorer.score_texts(["#### 7", "#### 8", "\\boxed{7}"], [PROBLEM] * 3)
    finally:
        scorer.close()
    assert rewards == [1.0, 0.0, 1.0] and metrics == {"reward/errors": 0.0}
