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
