"""Min/max bucket downsampling and the comparison summary (pure logic)."""
from hypothesis import given, settings
from hypothesis import strategies as st

from compare.summary import config_diff, default_reference, ratios, summary_row
from telemetry.downsample import Point, bucket_of, min_max_buckets

series = st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=400).flatmap(
    lambda ys: st.tuples(st.just(ys), st.lists(st.integers(1, 5), min_size=len(ys), max_size=len(ys))))


def _points(ys, gaps):
    step, out = 0, []
    for y, g in zip(ys, gaps):
        step += g
        out.append(Point(step, y, float(step)))
    return out


@settings(max_examples=200, deadline=None)
@given(series, st.integers(2, 60))
def test_bounded_sorted_subset_keeping_every_buckets_extremes(data, max_points):
    points = _points(*data)
    kept = min_max_buckets(points, max_points)
    assert len(kept) <= max_points
    assert [p.step for p in kept] == sorted({p.step for p in kept})
    assert set(kept) <= set(points)
    if len(points) <= max_points:
        assert kept == points
        return
    buckets = max_points // 2
    first, last = points[0].step, points[-1].step
    for b in {bucket_of(p.step, first, last, buckets) for p in points}:
        members = [p.value for p in points if bucket_of(p.step, first, last, buckets) == b]
        mine = [p.value for p in kept if bucket_of(p.step, first, last, buckets) == b]
        assert min(mine) == min(members) and max(mine) == max(members)
    # the global extremes (a spike) always survive
    assert max(p.value for p in kept) == max(p.value for p in points)
    assert min(p.value for p in kept) == min(p.value for p in points)


def test_a_single_spike_in_ten_thousand_points_survives():
    points = [Point(i, 1.0, float(i)) for i in range(10_000)]
    points[7_777] = Point(7_777, 99.0, 7_777.0)
    kept = min_max_buckets(points, 1500)
    assert len(kept) <= 1500 and Point(7_777, 99.0, 7_777.0) in kept


def test_summary_ratios_and_missing_metrics():
    stats = {"rollout/throughput_tok_s": {"median": 200.0, "last": 210.0, "count": 3},
             "reward/mean": {"median": 0.1, "last": 0.3, "count": 3}}
    row = summary_row(stats)
    assert row["throughput_tok_s"] == 200.0 and row["reward"] == 0.3 and row["accept_len"] is None
    ref = dict(row, throughput_tok_s=100.0, reward=0.0)
    r = ratios(row, ref)
    assert r["throughput_tok_s"] == 2.0 and r["reward"] is None and r["accept_len"] is None


def test_default_reference_is_the_static_group_run_of_the_same_config():
    base = {"model": "tiny", "max_tokens": 64}
    configs = {
        5: {**base, "rollout_policy": "seer", "chunk_tokens": 32},
        3: {**base, "max_tokens": 128, "rollout_policy": "static-group"},
        4: {**base, "rollout_policy": "static-group"},
    }
    assert default_reference(configs) == 4
    assert default_reference({7: {"rollout_policy": "seer"}, 8: {"rollout_policy": "request-lb"}}) == 7
    # the peer as it runs is preferred over its capped variant
    assert default_reference({**configs, 9: {**base, "rollout_policy": "verl"}}) == 9


def test_config_diff_keeps_only_differing_keys():
    diff = config_diff({1: {"a": 1, "b": 2}, 2: {"a": 1, "b": 3, "c": True}})
    assert diff["keys"] == ["b", "c"]
    assert diff["values"] == {1: {"b": 2, "c": None}, 2: {"b": 3, "c": True}}


def test_reference_prefers_runs_with_data_and_reports_config_mismatch():
    from compare.summary import reference_mismatch

    configs = {5: {"rollout_policy": "static-group", "iterations": 2},
               2: {"rollout_policy": "seer", "iterations": 2},
               3: {"rollout_policy": "static-group", "iterations": 2}}
    assert default_reference(configs) == 5
    assert default_reference(configs, with_data={2, 3}) == 3  # 5 was cancelled before its first point
    assert default_reference(configs, with_data=set()) == 5
    assert reference_mismatch(configs, 3) == {}
    configs[2] = {"rollout_policy": "seer", "iterations": 20, "prompts_per_iteration": 8}
    assert reference_mismatch(configs, 3) == {2: ["iterations", "prompts_per_iteration"]}
