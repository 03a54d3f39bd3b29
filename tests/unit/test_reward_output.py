"""A custom reward that prints without end (umbra.rewards.output): what the real pool's spawned
workers write to stdout and stderr (print, os.write on the descriptors, a child process) reaches
this process's stderr, the job log, only up to the cap; the rest is dropped and a job note says
so, and the pool goes on scoring."""
from __future__ import annotations

import os

from umbra.data.problem import Problem
from umbra.rewards.custom import check_reward, outside_dirs, resolve_in_dirs
from umbra.rewards.output import OUTPUT_CAP_BYTES
from umbra.rewards.score import Scorer

LOUD = '''
import os, subprocess, sys
def compute_score(data_source, solution_str, ground_truth, extra_info):
    print("a line of the reward's output:", solution_str)
    if solution_str == "loud":
        for i in range(1_000_000):
            print("reward debug line", i)
        sys.stderr.write("x" * 100_000 + "\\n")
        os.write(1, b"y" * 100_000)
        subprocess.run(["sh", "-c", "head -c 200000 /dev/zero | tr '\\\\0' z"], check=True)
    return float(solution_str == ground_truth)
'''
PROBLEM = Problem(question="q", answer="7", data_source="unit")


def test_a_reward_that_prints_a_million_lines_is_capped_in_the_job_log(tmp_path, monkeypatch, capfd):
    folder = tmp_path / "rewards"
    folder.mkdir()
    (folder / "loud.py").write_text(LOUD)
    monkeypatch.setenv("UMBRA_REWARD_DIRS", str(folder))
    dirs = os.environ["UMBRA_REWARD_DIRS"].split(os.pathsep)
    spec = resolve_in_dirs("loud.py:compute_score", dirs)  # as the platform's config check does
    assert outside_dirs(spec, dirs) is None
    check_reward(spec)

    scorer = Scorer(spec, timeout_s=120.0, workers=2)
    try:
        # a quiet answer scored on its own first: beside the loud one, on the pool's other worker,
        # its line could reach the log after the loud one's output had filled the cap
        first, _ = scorer.score_texts(["7"], [PROBLEM])
        rewards, metrics = scorer.score_texts(["loud", "8"], [PROBLEM] * 2)  # ~24 MB printed
        again, _ = scorer.score_texts(["7"], [PROBLEM])
        dropped = scorer.pool.output.dropped
    finally:
        scorer.close()
    notes = scorer.take_notes()
    out, err = capfd.readouterr()
    assert first == [1.0] and rewards == [0.0, 0.0] and again == [1.0] and metrics["reward/errors"] == 0
    assert out == ""  # the workers' stdout too went to the job log (stderr), bounded
    assert "a line of the reward's output: 7" in err
    assert len(err.encode()) < OUTPUT_CAP_BYTES + 1000  # the cap and one line saying so
    assert "the rest of its output is not shown" in err
    assert dropped > 20_000_000  # counted, not kept
    (note,) = notes
    assert "the reward printed more than 64 KiB" in note and "is dropped" in note
