"""A reward that forks, exits while a process it started lives on, or leaves processes running
(umbra.rewards.pool, real spawned workers): its forked copy never answers in the worker's
place (the next calls' rewards stay their own), a worker's exit is seen at once instead of at
the call's timeout, and what the reward started is ended with its worker."""
from __future__ import annotations

import time

import psutil
import pytest

from umbra.data.problem import Problem
from umbra.rewards.score import Scorer

REWARD = '''
import os, subprocess, time
def compute_score(data_source, solution_str, ground_truth, extra_info):
    if solution_str == "fork":  # the forked copy returns from the call too, scoring 1
        return 1.0 if os.fork() == 0 else 0.5
    if solution_str == "exit-with-child":  # the child holds the worker's ends of its pipes
        if os.fork() == 0:
            time.sleep(5)  # an orphan that never runs a program: nothing finds it (pool.MARK_ENV)
            os._exit(0)
        os._exit(3)
    if solution_str == "start-sleeper":
        child = subprocess.Popen(["sleep", "60"])
        with open(ground_truth, "w") as f:
            f.write(str(child.pid))
        return 0.0
    if solution_str == "escape":  # a session of its own, then the worker exits: init's child
        child = subprocess.Popen(["sleep", "61"], start_new_session=True)
        with open(ground_truth, "w") as f:
            f.write(str(child.pid))
        os._exit(4)
    return float(solution_str == ground_truth)
'''
PROBLEM = Problem(question="q", answer="7", data_source="unit")


@pytest.fixture
def scorer(tmp_path):
    path = tmp_path / "processes.py"
    path.write_text(REWARD)
    s = Scorer(f"{path}:compute_score", timeout_s=20.0, workers=1)
    yield s
    s.close()


def test_a_forked_copy_of_the_worker_never_answers_for_the_next_calls(scorer):
    assert scorer.score_texts(["fork"], [PROBLEM])[0] == [0.5]
    for _ in range(3):  # a stale 1.0 from the copy would be taken as one of these results
        assert scorer.score_texts(["8", "7", "8"], [PROBLEM] * 3)[0] == [0.0, 1.0, 0.0]


def test_a_worker_that_exits_is_seen_at_once_though_its_child_holds_the_pipe(scorer):
    start = time.monotonic()
    rewards, metrics = scorer.score_texts(["exit-with-child", "7"], [PROBLEM] * 2)
    assert time.monotonic() - start < 10.0  # not the 20 s timeout, nor a wait on the child
    assert rewards == [0.0, 1.0] and metrics["reward/errors"] == 1.0
    (note,) = scorer.take_notes()
    assert "reward process died (exit code 3)" in note


def test_what_a_reward_started_ends_when_the_pool_closes(scorer, tmp_path):
    pid_file = tmp_path / "sleeper.pid"
    scorer.score_texts(["start-sleeper"], [Problem(question="q", answer=str(pid_file), data_source="unit")])
    sleeper = psutil.Process(int(pid_file.read_text()))
    assert sleeper.is_running()
    scorer.close()
    assert _ended(sleeper, within_s=5.0)


def test_what_a_reward_started_ends_though_it_left_the_workers_process_tree(scorer, tmp_path):
    pid_file = tmp_path / "escaped.pid"
    rewards, _ = scorer.score_texts(["escape"], [Problem(question="q", answer=str(pid_file), data_source="unit")])
    assert rewards == [0.0]  # the worker died (exit code 4) and was replaced
    escaped = psutil.Process(int(pid_file.read_text()))
    assert _ended(escaped, within_s=5.0)  # ended with its worker, not only when the pool closes
    assert scorer.score_texts(["7"], [PROBLEM])[0] == [1.0]  # the replacement answers


def test_closing_one_pool_leaves_another_pools_workers_and_multiprocessings_helpers(tmp_path):
    path = tmp_path / "processes.py"
    path.write_text(REWARD)
    first, second = (Scorer(f"{path}:compute_score", timeout_s=20.0, workers=1) for _ in range(2))
    pid_file = tmp_path / "second.pid"
    second.score_texts(["start-sleeper"], [Problem(question="q", answer=str(pid_file), data_source="unit")])
    sleeper = psutil.Process(int(pid_file.read_text()))
    before = {p.pid for p in psutil.Process().children()}  # the workers, the resource tracker
    first.close()
    assert sleeper.is_running() and sleeper.status() != psutil.STATUS_ZOMBIE
    assert second.score_texts(["7"], [PROBLEM])[0] == [1.0]
    alive = {p.pid for p in psutil.Process().children() if p.status() != psutil.STATUS_ZOMBIE}
    assert len(before - alive) == 1  # only the first pool's worker ended
    second.close()
    assert _ended(sleeper, within_s=5.0)


def _ended(proc: psutil.Process, within_s: float) -> bool:
    """Whether ``proc`` is gone (or a zombie: killed, left for whoever reaps orphans) within ``within_s``."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            if proc.status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False
