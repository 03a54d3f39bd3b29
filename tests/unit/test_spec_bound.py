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


def _args(tmp_path, cost, **kw):
    class Args:
        pass

    args = Args()
    trace = tmp_path / "t.jsonl"
    trace.write_text(json.dumps({"policy": "seer-no-spec", "finish_s": 10.0, "chunks": [[0, 0.0, 10.0, 64]]}) + "\n")
    (tmp_path / "cost.json").write_text(json.dumps(cost))
    args.cost, args.trace, args.policy, args.gamma_max, args.json_path = str(tmp_path / "cost.json"), str(trace), \
        "seer-no-spec", 8, None
    args.accept_rate, args.cost_shape, args.accept_profile = 1.0, "s", None
    for k, v in kw.items():
        setattr(args, k, v)
    return args


GOOD_SHAPE = {"fit": COST, "table": {"1": {"0": 0.01, "2": 0.012}, "8": {"0": 0.017, "2": 0.04}}}


@pytest.mark.parametrize("cost", [
    [], 3, {"shapes": []}, {"shapes": {"s": None}},
    {"fit": {"c0_s": 0.1}}, {"fit": dict(COST, draft_s=-0.001)}, {"fit": dict(COST, c0_s="0.1")},
    {"fit": COST, "shapes_": 1},
    {"shapes": {"s": dict(GOOD_SHAPE, table={"1": {"2": 0.01}})}},          # no g = 0
    {"shapes": {"s": dict(GOOD_SHAPE, table={"1": {"0": -0.01}})}},         # negative time
    {"shapes": {"s": dict(GOOD_SHAPE, table={"1": {"0": 0}})}},             # zero time
    {"shapes": {"s": dict(GOOD_SHAPE, table={"b1": {"0": 0.01}})}},
    {"shapes": {"s": dict(GOOD_SHAPE, table={"4": {"0": 0.01}, "04": {"0": 0.02}})}},
    {"shapes": {"s": dict(GOOD_SHAPE, table={"1": {"0": "x"}})}},
    {"shapes": {"s": dict(GOOD_SHAPE, table=[])}},
])
def test_malformed_cost_files_get_one_line_errors(tmp_path, capsys, cost):
    shape = None if isinstance(cost, dict) and "fit" in cost and "shapes_" not in cost else "s"
    assert run(_args(tmp_path, cost, cost_shape=shape)) == 2
    err = capsys.readouterr().err
    assert err.startswith("umbra bench spec-bound:") and "Traceback" not in err


@pytest.mark.parametrize("profile", [[1, None], {"expected_tokens": [1, 5, 9]}, {"expected_tokens": "1234"},
                                     {"expected_tokens": [1, -1]}, {"expected_tokens": [1, 1e9]}])
def test_impossible_accept_profiles_are_refused(tmp_path, capsys, profile):
    (tmp_path / "p.json").write_text(json.dumps(profile))
    assert run(_args(tmp_path, {"shapes": {"s": GOOD_SHAPE}}, accept_profile=str(tmp_path / "p.json"))) == 2
    assert "expected_tokens" in capsys.readouterr().err


def test_bad_traces_flags_and_outputs_are_refused_up_front(tmp_path, capsys):
    good = {"shapes": {"s": GOOD_SHAPE}}
    assert run(_args(tmp_path, good)) == 0
    assert run(_args(tmp_path, {"fit": COST}, cost_shape=None)) == 0
    for kw in ({"gamma_max": 0}, {"gamma_max": 10**6}, {"json_path": str(tmp_path)}, {"trace": "/dev/zero"},
               {"cost_shape": "nosuch"}):
        assert run(_args(tmp_path, good, **kw)) == 2
    args = _args(tmp_path, good)
    for line in ('{"policy": "seer-no-spec", "finish_s": 1, "chunks": [[0, 1.0, 2.0]]}',
                 '{"policy": "seer-no-spec", "finish_s": 1, "chunks": [[0, 2.0, 1.0, 5]]}',
                 '{"policy": "seer-no-spec", "finish_s": 1, "chunks": [[0, 0, Infinity, 5]]}',
                 '{"policy": "seer-no-spec", "finish_s": 1, "chunks": []}'):
        (tmp_path / "t.jsonl").write_text(line + "\n")
        assert run(args) == 2
    assert "Traceback" not in capsys.readouterr().err


def test_beyond_the_largest_batch_the_step_never_gets_cheaper():
    noisy = dict(COST, table={"64": {"0": 0.0060}, "128": {"0": 0.0055}})  # B = 128 measured below B = 64
    assert step_time(noisy, 1200, 0) == pytest.approx(0.0055)


def test_spec_bound_selective_reads_the_profile_positions_and_refuses_without_them(tmp_path, capsys):
    from umbra.bench.accept_ceiling import expected_tokens

    cheap = dict(COST, draft_s=0.001)  # a draft token pays at the trace's 64 rows
    profile = tmp_path / "p.json"
    profile.write_text(json.dumps({"expected_tokens": expected_tokens([[0.9] * 30]), "pmax": [[0.9] * 30]}))
    out = tmp_path / "o.json"
    assert run(_args(tmp_path, {"fit": cheap}, cost_shape=None, accept_profile=str(profile), selective=True,
                     json_path=str(out))) == 0
    got = json.loads(out.read_text())
    assert got["selective"] and got["speedup"] > 1.0
    assert run(_args(tmp_path, {"fit": cheap}, cost_shape=None, selective=True)) == 2
    assert "--selective needs --accept-profile" in capsys.readouterr().err
    profile.write_text(json.dumps({"expected_tokens": [1.0, 1.5]}))  # an older file: no positions
    assert run(_args(tmp_path, {"fit": cheap}, cost_shape=None, accept_profile=str(profile), selective=True)) == 2
    assert "holds no pmax" in capsys.readouterr().err
