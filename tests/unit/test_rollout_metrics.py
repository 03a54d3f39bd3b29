import pytest

from umbra.rollout.metrics import request_records, rollout_metrics, tail_time
from umbra.rollout.request import ChunkRecord, Request, RequestStatus


def _req(g, i, start, finish, n, reason="stop"):
    r = Request(group_id=g, index=i, prompt_token_ids=[1], max_tokens=8, seed=0)
    r.start_s, r.finish_s, r.output_token_ids, r.status, r.instance = start, finish, [0] * n, RequestStatus(reason), 0
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
                       "prompt_tokens": 1, "output_tokens": 20, "finish_reason": "length", "policy_version": None, "chunks": []}


def test_unfinished_request_is_refused():
    r = _req(0, 0, 0.0, 1.0, 1)
    r.finish_s = None
    with pytest.raises(ValueError):
        rollout_metrics([r], 0.0, 1.0)




def test_idle_fraction_and_engine_metrics():
    from umbra.rollout.metrics import engine_metrics, instance_idle_frac

    r = _req(0, 0, 0.0, 10.0, 4)
    r.chunks = [ChunkRecord(0, 0.0, 4.0, 2), ChunkRecord(1, 2.0, 10.0, 2)]
    assert instance_idle_frac([r], 0.0, 10.0, 3) == pytest.approx([0.6, 0.2, 1.0])
    before = [{"preemptions": 1.0, "spec_drafts": 10.0, "spec_draft_tokens": 40.0, "spec_accepted": 5.0}]
    after = [{"preemptions": 1.0, "spec_drafts": 20.0, "spec_draft_tokens": 80.0, "spec_accepted": 20.0}]
    m = engine_metrics(before, after)
    assert m == {"rollout/preemptions": 0.0, "rollout/spec/accept_len": 2.5, "rollout/spec/draft_tokens": 40.0,
                 "rollout/spec/accepted_tokens": 15.0}
