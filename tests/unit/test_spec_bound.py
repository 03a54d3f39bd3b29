"""The oracle drafter's bound (umbra bench spec-bound) and the step-cost fit of spec-cost."""
import json

import pytest

from umbra.bench.spec_bound import bound, run, shrink, step_time, stretches
from umbra.bench.spec_cost import fit_step_cost

COST = {"c0_s": 0.1, "row_s": 0.004, "draft_s": 0.007}


def test_stretches_count_running_rows():
    assert stretches([(0, 10), (0, 4), (2, 6)]) == [(0, 2, 2), (2, 4, 3), (4, 6, 2), (6, 10, 1)]


def test_drafts_pay_at_one_row_and_not_when_a_draft_token_costs_more_than_a_row():
    f1, g1 = shrink(1, COST, 8)
    assert g1 == 8 and f1 == pytest.approx((0.104 + 0.056) / (9 * 0.104))
    assert shrink(64, COST, 8) == (1.0, 0)  # 0.356 s a step: one more token a row costs 0.448 s
    cheap = dict(COST, draft_s=0.001)  # a GPU-like verify: drafts pay at any batch
    assert shrink(64, cheap, 8)[1] == 8


def test_bound_shrinks_only_the_small_batch_stretches():
    # one instance: 64 rows for 100 s, then a single row for 50 s (the tail)
    records = [{"chunks": [[0, 0.0, 100.0, 10]]} for _ in range(63)] + [{"chunks": [[0, 0.0, 150.0, 10]]}]
    out = bound(records, COST, 8, tail_from=100.0)
    f1 = shrink(1, COST, 8)[0]
    assert out["busy_s"] == pytest.approx(150.0)
    assert out["oracle_busy_s"] == pytest.approx(100.0 + 50.0 * f1)
    assert out["tail_speedup"] == pytest.approx(1 / f1)
    assert out["best_draft_by_rows"] == {1: 8, 64: 0}


def test_fit_recovers_the_step_cost():
    results = {k: {str(b): {"step_ms": 1000 * (0.05 + 0.004 * b + 0.006 * b * g)} for b in (1, 8, 32)}
               for k, g in (("none", 0), ("draft2", 2), ("draft4", 4))}
    results["none"]["draft_tokens"] = 0
    fit = fit_step_cost(results)
    assert fit == {k: pytest.approx(v) for k, v in {"c0_s": 0.05, "row_s": 0.004, "draft_s": 0.006}.items()}
    assert fit_step_cost({"none": results["none"], "null": results["none"]}) is None


def test_cli_refuses_a_cost_file_without_a_fit(tmp_path, capsys):
    cost, trace = tmp_path / "cost.json", tmp_path / "t.jsonl"
    cost.write_text(json.dumps({"results": {}, "fit": None}))
    trace.write_text("")

    class Args:
        pass

    args = Args()
    args.cost, args.trace, args.policy, args.gamma_max, args.json_path = str(cost), str(trace), "seer-no-spec", 8, None
    args.accept_rate, args.cost_shape = 1.0, None
    assert run(args) == 2
    assert "no step-cost fit" in capsys.readouterr().err
    cost.write_text(json.dumps({"shapes": {"qwen2.5-7b": {"fit": COST, "table": {}}}}))
    assert run(args) == 2  # a GPU file names its shapes: one must be picked
    assert "--cost-shape" in capsys.readouterr().err


# a measured table (scripts/device/spec_cost_gpu.py): step seconds by batch, then draft length
TABLE = dict(COST, table={"1": {"0": 0.010, "2": 0.012}, "8": {"0": 0.017, "2": 0.040}})


def test_a_measured_table_is_interpolated_in_rows_and_beats_the_fit():
    assert step_time(TABLE, 1, 2) == pytest.approx(0.012)
    assert step_time(TABLE, 4, 0) == pytest.approx(0.010 + 0.007 * 3 / 7)  # between the batches
    assert step_time(TABLE, 15, 2) == pytest.approx(0.040 + 0.028)  # beyond the largest: the last slope
    assert step_time(TABLE, 1, 5) is None  # not measured: never chosen
    f, g = shrink(1, TABLE, 8, 0.9)
    assert g == 2 and f == pytest.approx(0.012 / ((1 + 0.9 + 0.81) * 0.010))
    assert shrink(8, TABLE, 8, 0.5) == (1.0, 0)  # 0.040 s for 1.75 tokens: worse than two plain steps
