"""The metric ingestion endpoint: auth, validation, exactly-once storage."""
import pytest

from runs.models import Run
from telemetry.models import MetricBatch, MetricPoint

pytestmark = pytest.mark.django_db


@pytest.fixture
def run_token(running_run):
    return running_run


def _post(client, run_id, body, token, content_type="application/json"):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token is not None else {}
    return client.post(f"/api/runs/{run_id}/metrics/", body, content_type=content_type, **headers)


BATCH = {"seq": 1, "points": [{"name": "rollout/time_s", "step": 0, "value": 1.5}],
         "trace": {"iteration": 0, "requests": [{"group": 0, "index": 0, "instance": 1, "start_s": 0.0,
                                                 "finish_s": 1.2, "output_tokens": 9, "finish_reason": "stop",
                                                 "policy_version": 0}]}}


def test_batch_is_stored_once_even_when_retried(client, run_token):
    run, token = run_token
    assert _post(client, run.pk, BATCH, token).status_code == 201
    again = _post(client, run.pk, BATCH, token)
    assert again.status_code == 200 and again.json()["stored"] is False
    assert MetricPoint.objects.filter(run=run).count() == 1
    assert run.traces.get().requests[0]["instance"] == 1


@pytest.mark.parametrize("token,status", [("wrong", 404), (None, 404), ("", 404)])
def test_bad_token_is_refused(client, run_token, token, status):
    run, _ = run_token
    assert _post(client, run.pk, BATCH, token).status_code == status
    assert MetricBatch.objects.count() == 0


@pytest.mark.parametrize("body", [
    "{not json",
    {"points": []},
    {"seq": 0, "points": []},
    {"seq": 1, "points": [{"name": "x", "step": -1, "value": 1}]},
    {"seq": 1, "points": [{"name": "bad name!", "step": 0, "value": 1}]},
    {"seq": 1, "points": [{"name": "x", "step": 0, "value": "NaN"}]},
    {"seq": 1, "points": [{"name": "x", "step": 0, "value": 1}], "extra": 1},
])
def test_malformed_batch_gets_400_with_message(client, run_token, body):
    run, token = run_token
    resp = _post(client, run.pk, body, token)
    assert resp.status_code == 400 and resp.json()["detail"]
    assert MetricPoint.objects.count() == 0 and MetricBatch.objects.count() == 0


def test_token_expires_with_the_run_and_unknown_run_is_404(client, run_token):
    run, token = run_token
    assert _post(client, run.pk + 999, BATCH, token).status_code == 404
    Run.objects.filter(pk=run.pk).update(state=Run.State.SUCCEEDED)
    assert _post(client, run.pk, BATCH, token).status_code == 404
    assert MetricPoint.objects.count() == 0


@pytest.mark.parametrize("raw", [
    '{"seq":1,"points":[],"x":' + "[" * 100_000 + "]" * 100_000 + "}",
    '{"seq":1,"points":[{"name":"x","step":0,"value":' + "9" * 5000 + "}]}",
    '{"seq":"5","points":[]}',
    '{"seq":1,"points":[{"name":"x","step":0,"value":true}]}',
    '{"seq":1,"points":[],"trace":{"iteration":2147483648,"requests":[]}}',
    '{"seq":1,"points":[],"trace":{"iteration":0,"requests":[{"group":0,"index":0,"start_s":2,'
    '"finish_s":1,"output_tokens":1}]}}',
    '{"seq":1,"points":[],"trace":{"iteration":0,"requests":[{"group":0,"index":0,"start_s":0,'
    '"finish_s":NaN,"output_tokens":1}]}}',
])
def test_hostile_bodies_get_400_and_store_nothing(client, run_token, raw):
    run, token = run_token
    resp = _post(client, run.pk, raw, token)
    assert resp.status_code == 400 and resp.json()["detail"]
    assert MetricBatch.objects.count() == 0 and MetricPoint.objects.count() == 0


def _nothing_stored():
    from telemetry.models import IterationTrace

    return MetricBatch.objects.count() == 0 and MetricPoint.objects.count() == 0 and IterationTrace.objects.count() == 0


def _point(**changes):
    return {"name": "rollout/time_s", "step": 0, "value": 1.0, **changes}


def _row(**changes):
    return {"group": 0, "index": 0, "start_s": 0.0, "finish_s": 1.0, "output_tokens": 5, **changes}


def _trace_batch(*rows, **meta):
    trace = {"iteration": 0, "requests": list(rows)}
    if meta:
        trace["meta"] = {"policy": "seer", "instances": 2, "capacity": 4, "kv_cache_gib": 1, "max_tokens": 64, **meta}
    return {"seq": 1, "points": [], "trace": trace}


@pytest.mark.parametrize("body,needle", [
    # sizes: points, names, traces
    ({"seq": 1, "points": [_point(step=i) for i in range(10_001)]}, "points"),
    ({"seq": 1, "points": [_point(name="a" * 201)]}, "points.0.name"),
    ({"seq": 1, "points": [_point(name="")]}, "points.0.name"),
    # wrong types
    ({"seq": 1, "points": {"name": "x"}}, "points"),
    ({"seq": 1, "points": [_point(step="0")]}, "points.0.step"),
    ({"seq": 1, "points": [_point(step=1.5)]}, "points.0.step"),
    ({"seq": 1, "points": [_point(value="1")]}, "points.0.value"),
    ({"seq": 1, "points": [_point(value=None)]}, "points.0.value"),
    ({"seq": 1, "points": [_point(name=5)]}, "points.0.name"),
    ({"seq": 1.0, "points": []}, "seq"),
    ({"seq": True, "points": []}, "seq"),
    ({"seq": None, "points": []}, "seq"),
    ([1, 2], "malformed metric batch"),
    ("a string", "malformed metric batch"),
    (17, "malformed metric batch"),
    # negative and huge seq / step
    ({"seq": -1, "points": []}, "seq"),
    ({"seq": 2**31, "points": []}, "seq"),
    ({"seq": 10**40, "points": []}, "seq"),
    ({"seq": 1, "points": [_point(step=-5)]}, "points.0.step"),
    ({"seq": 1, "points": [_point(step=2**31)]}, "points.0.step"),
    ({"seq": 1, "points": [_point(step=10**40)]}, "points.0.step"),
    # traces with bad rows (the good point must not be stored either)
    ({**_trace_batch(_row(output_tokens=-1)), "points": [_point()]}, "output_tokens"),
    (_trace_batch({"group": 0, "index": 0}), "trace.requests.0"),
    (_trace_batch(_row(), _row(chunks=[[0, 0.0, 1.0]])), "trace.requests.1.chunks"),
    (_trace_batch(_row(chunks=[["a", 0.0, 1.0, 4]])), "chunks"),
    (_trace_batch(_row(group="0")), "trace.requests.0.group"),
    (_trace_batch(_row(start_s=-1.0)), "start_s"),
    (_trace_batch(_row(finish_s=1e300)), "finish_s"),
    (_trace_batch(_row(finish_reason="x" * 21)), "finish_reason"),
    (_trace_batch(_row(bogus=1)), "bogus"),
    (_trace_batch(_row(), instances=0), "trace.meta.instances"),
    (_trace_batch(_row(), policy="p" * 41), "trace.meta.policy"),
    ({"seq": 1, "points": [], "trace": {"iteration": -1, "requests": []}}, "trace.iteration"),
    ({"seq": 1, "points": [], "trace": {"iteration": 0, "requests": {}}}, "trace.requests"),
    # NUL cannot be stored by PostgreSQL (text or jsonb): refused up front, not a 500
    (_trace_batch(_row(finish_reason="st\x00p")), "finish_reason"),
    (_trace_batch(_row(), policy="se\x00er"), "trace.meta.policy"),
    ({"seq": 1, "points": [_point()], "events": ["instance 0 died\x00"]}, "events.0"),
])
def test_bad_batches_get_400_naming_the_problem_and_store_nothing(client, run_token, body, needle):
    run, token = run_token
    resp = _post(client, run.pk, body, token)
    assert resp.status_code == 400, resp.content[:300]
    assert needle in resp.json()["detail"], resp.json()
    assert _nothing_stored()


@pytest.mark.parametrize("raw", [
    "", " ", "null", "{}", "{\"seq\": 1, \"points\": []",  # truncated
    '{"seq":1,"points":[{"name":"x","step":0,"value":NaN}]}',
    '{"seq":1,"points":[{"name":"x","step":0,"value":Infinity}]}',
    '{"seq":1,"points":[{"name":"x","step":0,"value":-Infinity}]}',
    '{"seq":1,"points":[{"name":"x","step":0,"value":1e400}]}',
    '{"seq":1,"points":[{"name":"x","step":NaN,"value":1}]}',
])
def test_malformed_json_gets_400_and_stores_nothing(client, run_token, raw):
    run, token = run_token
    resp = _post(client, run.pk, raw, token)
    assert resp.status_code == 400 and resp.json()["detail"].startswith("malformed metric batch")
    assert _nothing_stored()


@pytest.mark.parametrize("raw", [b"\xff\xfe\x00{", b"\x89PNG\r\n\x1a\n\x00\x00", b'{"seq":1,"points":[{"name":"\xe9","step":0,"value":1}]}'])
def test_binary_and_non_utf8_bodies_get_400(client, run_token, raw):
    run, token = run_token
    resp = _post(client, run.pk, raw, token, content_type="application/octet-stream")
    assert resp.status_code == 400 and resp.json()["detail"]
    assert _nothing_stored()


def test_body_over_the_upload_limit_gets_400_before_parsing(client, run_token, settings):
    run, token = run_token
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 64 * 1024
    body = '{"seq":1,"points":[' + ",".join(['{"name":"x","step":0,"value":1}'] * 3000) + "]}"
    assert len(body) > settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    resp = _post(client, run.pk, body, token)
    assert resp.status_code == 400 and "too large" in resp.json()["detail"]
    assert _nothing_stored()


def test_body_over_the_default_limit_gets_400(client, run_token):
    """The real limit (8 MiB): a batch padded past it is refused with a message."""
    from django.conf import settings

    run, token = run_token
    pad = "x" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1)
    resp = _post(client, run.pk, '{"seq":1,"points":[],"pad":"' + pad + '"}', token)
    assert resp.status_code == 400 and "too large" in resp.json()["detail"]
    assert _nothing_stored()


def test_limits_are_inclusive(client, run_token):
    """The largest accepted batch: 10,000 points, a 200-character name, seq and step at 2**31-1."""
    run, token = run_token
    points = [_point(name="a" * 200, step=2**31 - 1)] + [_point(step=i) for i in range(9_999)]
    resp = _post(client, run.pk, {"seq": 2**31 - 1, "points": points}, token)
    assert resp.status_code == 201, resp.content[:300]
    assert MetricPoint.objects.filter(run=run).count() == 10_000


def test_points_of_names_past_the_runs_limit_are_dropped_with_one_note(client, run_token, monkeypatch):
    """A job logging a new name per point (hostile host names, say) must not make the run page
    load them all; the batch's other points are kept, and one note says so."""
    from runs.models import RunEvent
    from telemetry import name_limit

    monkeypatch.setattr(name_limit, "MAX_METRIC_NAMES", 5)
    run, token = run_token
    for seq in (1, 2):
        points = [{"name": "rollout/time_s", "step": seq, "value": 1.0}] + [
            {"name": f"system/node/h{seq}-{i}/cpu_percent", "step": seq, "value": 2.0} for i in range(6)]
        assert _post(client, run.pk, {"seq": seq, "points": points}, token).status_code == 201
    names = set(MetricPoint.objects.filter(run=run).values_list("name", flat=True))
    assert names == {"rollout/time_s", *(f"system/node/h1-{i}/cpu_percent" for i in range(4))}
    assert MetricPoint.objects.filter(run=run, name="rollout/time_s").count() == 2  # a known name is kept
    assert name_limit.stored_name_count(run.pk) == 5
    (note,) = RunEvent.objects.filter(run=run, kind=RunEvent.Kind.JOB).values_list("reason", flat=True)
    assert note.startswith("metric names past the run's limit of 5 distinct names are not stored (this batch: 2, "
                           "such as system/node/h1-4/cpu_percent, system/node/h1-5/cpu_percent")
