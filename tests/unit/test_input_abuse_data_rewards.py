"""Hostile data files and reward functions (ours): each gets a DatasetError or an Outcome with a
message, never a crash of the process that reads it, a traceback out of ``load_file``, or a
metric batch the platform would refuse. Real pyarrow/datasets readers and real spawned pool
workers."""
from __future__ import annotations

import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from umbra.data.files import load_file
from umbra.data.gsm8k import DatasetError
from umbra.data.problem import Problem
from umbra.rewards import pool
from umbra.rewards.custom import check_reward
from umbra.rewards.score import MAX_EXTRA_METRICS, Scorer
from umbra.telemetry.client import TelemetryClient

PROBLEM = Problem(question="q", answer="7", data_source="unit")


def test_json_lines_nested_past_pyarrows_stack_is_refused_not_a_crash(tmp_path):
    path = tmp_path / "deep.jsonl"  # 20,000 levels kill the process inside pyarrow's JSON reader
    path.write_text('{"prompt": "p", "x": ' + "[" * 20000 + "]" * 20000 + "}\n")
    with pytest.raises(DatasetError, match=r"line 1: not JSON \(too deeply nested"):
        load_file(path)


def test_json_lines_that_are_not_utf8_are_refused(tmp_path):
    path = tmp_path / "latin1.jsonl"
    path.write_bytes('{"question": "caf\xe9", "answer": "#### 1"}\n'.encode("latin-1"))
    with pytest.raises(DatasetError, match="not UTF-8"):
        load_file(path)


def test_a_parquet_text_column_with_bytes_that_are_not_utf8_is_refused(tmp_path):
    path = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"prompt": pa.array([b"caf\xe9"], pa.binary()).view(pa.string())}), path)
    with pytest.raises(DatasetError, match="not UTF-8"):
        load_file(path)


def test_zero_row_parquet_and_rows_of_mixed_shapes_say_so(tmp_path):
    empty = tmp_path / "zero.parquet"
    pq.write_table(pa.table({"prompt": pa.array([], pa.string())}), empty)
    with pytest.raises(DatasetError, match="no rows"):
        load_file(empty)
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text('{"question": "q", "answer": "#### 1"}\n{"prompt": "p"}\n')
    with pytest.raises(DatasetError, match="row 1: no 'prompt' .*same shape"):
        load_file(mixed)


def test_a_reward_path_too_long_for_the_file_system_is_a_message():
    with pytest.raises(ValueError, match="does not exist"):
        check_reward("x" * 5000 + ".py:f")


REWARDS = '''
import os, sys
def exits(data_source, solution_str, ground_truth, extra_info):
    if solution_str == "exit":
        sys.exit(3)
    if solution_str == "_exit":
        os._exit(7)
    return 1.0
def nul(data_source, solution_str, ground_truth, extra_info):
    raise ValueError("bad\\x00value")
def wide(data_source, solution_str, ground_truth, extra_info):  # new keys in every call; a 400-digit one
    return {"score": 1.0, "huge": 10 ** 400, **{f"k {solution_str}/{i}": 1.0 for i in range(16)}}
'''


@pytest.fixture
def rewards(tmp_path):
    path = tmp_path / "rewards.py"
    path.write_text(REWARDS)
    return path


def test_exit_in_compute_score_scores_0_with_the_exit_code_and_the_pool_goes_on(rewards):
    scorer = Scorer(f"{rewards}:exits", timeout_s=20.0, workers=1)
    try:
        got, metrics = scorer.score_texts(["exit", "ok", "_exit", "ok"], [PROBLEM] * 4)
        notes = "\n".join(scorer.take_notes())
    finally:
        scorer.close()
    assert got == [0.0, 1.0, 0.0, 1.0] and metrics["reward/errors"] == 2
    assert "exit code 3" in notes and "exit code 7" in notes


def test_an_error_with_nul_is_noted_in_a_batch_the_platform_takes(rewards):
    scorer = Scorer(f"{rewards}:nul", timeout_s=20.0, workers=1)
    try:
        _, metrics = scorer.score_texts(["a"], [PROBLEM])
        notes = scorer.take_notes()
    finally:
        scorer.close()
    assert len(notes) == 1 and "\x00" not in notes[0] and "bad\\x00value" in notes[0]
    TelemetryClient.build(1, 0, metrics, events=notes)  # raises BatchInvalid for a NUL


def test_reward_extras_keep_the_score_and_at_most_16_metrics_a_run(rewards):
    scorer = Scorer(f"{rewards}:wide", timeout_s=20.0, workers=2)
    try:
        got, metrics = scorer.score_texts([str(i) for i in range(40)], [PROBLEM] * 40)
        _, later = scorer.score_texts(["new"], [PROBLEM])
    finally:
        scorer.close()
    assert got == [1.0] * 40 and metrics["reward/errors"] == 0  # the 400-digit extra is left out, not the call
    extras = [k for k in metrics if k.startswith("reward/extra/")]
    assert len(extras) == MAX_EXTRA_METRICS and all(" " not in k and k.count("/") == 2 for k in extras)
    assert not [k for k in later if k.startswith("reward/extra/") and k not in extras]
    TelemetryClient.build(1, 0, metrics)


def test_a_reward_file_that_hangs_at_import_fails_every_call_at_once(tmp_path, monkeypatch):
    path = tmp_path / "hangs.py"
    path.write_text("while True:\n    pass\ndef f(*a):\n    return 1.0\n")
    monkeypatch.setattr(pool, "STARTUP_TIMEOUT_S", 3.0)
    p = pool.RewardPool(f"{path}:f", workers=2, timeout_s=2.0)
    try:
        t0 = time.monotonic()
        out = p.score([("d", str(i), "1", {}) for i in range(20)])
        took = time.monotonic() - t0
    finally:
        p.close()
    assert took < 10  # not 20 calls x (2 s timeout + 3 s start-up)
    assert all(o.score == 0.0 and "did not load within 3 s" in o.error for o in out)


def test_sys_exit_at_import_is_the_load_error_of_every_call(tmp_path):
    path = tmp_path / "exits.py"
    path.write_text("import sys\nsys.exit(1)\ndef f(*a):\n    return 1.0\n")
    p = pool.RewardPool(f"{path}:f", workers=1, timeout_s=5.0)
    try:
        out = p.score([("d", "a", "1", {}), ("d", "b", "1", {})])
    finally:
        p.close()
    assert [o.error_key for o in out] == ["SystemExit: 1"] * 2


def test_a_data_file_that_is_a_fifo_is_refused_without_blocking(tmp_path):
    import os

    path = tmp_path / "rows.jsonl"
    os.mkfifo(path)  # reading it would wait for a writer forever
    start = time.monotonic()
    with pytest.raises(DatasetError, match="not a regular file"):
        load_file(path)
    assert time.monotonic() - start < 5.0
