import pytest

from umbra.rollout.metrics import request_records, rollout_metrics, tail_time
from umbra.rollout.policies import StaticGroupPolicy, make_policy
from umbra.rollout.request import Request, make_groups


def _req(g, i, start, finish, n, reason="stop"):
    r = Request(group_id=g, index=i, prompt_token_ids=[1], max_tokens=8, seed=0)
    r.start_s, r.finish_s, r.output_token_ids, r.finish_reason, r.instance = start, finish, [0] * n, reason, 0
    return r


def test_tail_time_is_time_spent_on_last_tenth():
    finishes = [float(i) for i in range(1, 11)]  # 10 requests, the 10th ends at 10 s
    assert tail_time(0.0, finishes) == pytest.approx(1.0)  # from the 9th finish (9 s) to 10 s
    with pytest.raises(ValueError):
        tail_time(0.0, [])


def test_rollout_metrics_names_and_values():
    reqs = [_req(0, 0, 0.0, 2.0, 10), _req(0, 1, 0.0, 4.0, 20, "length")]
    m = rollout_metrics(reqs, 0.0, 4.0)
    assert m["rollout/throughput_tok_s"] == pytest.approx(30 / 4.0)
    assert m["rollout/clip_ratio"] == 0.5
    assert m["rollout/request_latency_s/max"] == 4.0
    assert m["rollout/response_len/mean"] == 15
    rows = request_records(reqs, 0.0)
    assert rows[1] == {"group": 0, "index": 1, "instance": 0, "start_s": 0.0, "finish_s": 4.0,
                       "output_tokens": 20, "finish_reason": "length", "policy_version": None}


def test_unfinished_request_is_refused():
    r = _req(0, 0, 0.0, 1.0, 1)
    r.finish_s = None
    with pytest.raises(ValueError):
        rollout_metrics([r], 0.0, 1.0)


def test_static_group_assigns_whole_groups_round_robin():
    groups = make_groups([[1], [2], [3]], group_size=4, max_tokens=8, seed=0)
    plan = StaticGroupPolicy().assign(groups, 2)
    assert [sorted({r.group_id for r in reqs}) for reqs in plan] == [[0, 2], [1]]
    assert sum(len(p) for p in plan) == 12
    seeds = [r.seed for g in groups for r in g]
    assert len(set(seeds)) == len(seeds)  # every request samples with its own seed
    with pytest.raises(ValueError):
        make_policy("nope")
