"""The job's TelemetryClient builds its batches with the wire models: what it sends is the
JSON the platform accepts, and a malformed batch fails in the job, before any request."""
from __future__ import annotations

import json
import logging

import pytest

from umbra.telemetry.client import BatchInvalid, TelemetryClient
from umbra.telemetry.wire import BatchIn

ROW = {"group": 0, "index": 1, "instance": 1, "start_s": 0.0, "finish_s": 1.2, "prompt_tokens": 5,
       "output_tokens": 9, "finish_reason": "stop", "policy_version": 0, "chunks": [[1, 0.0, 1.2, 9]]}
META = {"policy": "seer", "instances": 2, "capacity": 8, "kv_cache_gib": 1, "max_tokens": 64}


class _NoNetwork:
    """A session that fails the test if anything is posted."""

    headers: dict = {}

    def post(self, *args, **kwargs):
        raise AssertionError("a malformed batch must not be sent")


def _client() -> TelemetryClient:
    client = TelemetryClient("http://127.0.0.1:9", "7", "tok", retries=1)
    client.session = _NoNetwork()
    return client


def test_batch_json_is_what_the_client_sent_before_the_models():
    batch = TelemetryClient.build(3, 2, {"rollout/time_s": 1.5, "reward/mean": 1}, trace=[ROW], trace_meta=META,
                                  events=["instance 1 died"])
    sent = batch.model_dump(mode="json", exclude_unset=True)
    assert sent == {"seq": 3, "points": [{"name": "rollout/time_s", "step": 2, "value": 1.5},
                                         {"name": "reward/mean", "step": 2, "value": 1.0}],
                    "events": ["instance 1 died"], "trace": {"iteration": 2, "requests": [ROW], "meta": META}}
    assert BatchIn.model_validate_json(json.dumps(sent)) == batch  # the platform reads it back the same


def test_optional_parts_are_left_out_as_before():
    sent = TelemetryClient.build(1, 0, {"x": 1.0}, trace=[{k: v for k, v in ROW.items() if k != "chunks"}])
    assert sent.model_dump(mode="json", exclude_unset=True) == {
        "seq": 1, "points": [{"name": "x", "step": 0, "value": 1.0}],
        "trace": {"iteration": 0, "requests": [{k: v for k, v in ROW.items() if k != "chunks"}]}}


def test_non_finite_values_are_dropped_and_long_notes_cut(caplog):
    batch = TelemetryClient.build(1, 0, {"a": float("nan"), "b": 2.0}, events=["n" * 5000])
    assert [p.name for p in batch.points] == ["b"] and batch.events == ["n" * 1000]
    assert "metric a at step 0 is not finite" in caplog.text


def test_a_malformed_batch_fails_in_the_job_naming_the_field():
    client = _client()
    with pytest.raises(BatchInvalid, match=r"batch 1 \(iteration 0\).*points\.0\.name: .*\(got 'bad name'\)"):
        client.send(0, {"bad name": 1.0})
    with pytest.raises(ValueError, match=r"points\.0\.step"):
        client.send(-1, {"ok": 1.0})
    assert client.seq == 0 and client.pending == []  # nothing queued, no batch number used


def test_a_malformed_trace_is_left_out_and_the_metrics_kept(caplog):
    caplog.set_level(logging.WARNING)
    batch = TelemetryClient.build(1, 4, {"x": 1.0}, trace=[{**ROW, "finish_s": -1.0}], trace_meta=META)
    assert batch.trace is None and [p.name for p in batch.points] == ["x"]
    assert "trace of iteration 4 is malformed" in caplog.text and "requests.0.finish_s" in caplog.text
    bad_meta = TelemetryClient.build(1, 4, {"x": 1.0}, trace=[ROW], trace_meta={**META, "capacity": 0})
    assert bad_meta.trace is None


def test_without_a_platform_the_batch_is_only_logged():
    client = TelemetryClient("", "local", "")
    assert client.send(0, {"rollout/time_s": 1.0}) and client.seq == 1 and client.pending == []


def test_a_left_out_trace_is_noted_in_the_run_event_log():
    """Before the client validated, a malformed trace was refused by the platform (400) and the
    job failed saying why; now that it is left out, the run's event log must say so, not only
    the driver's log."""
    batch = TelemetryClient.build(1, 4, {"x": 1.0}, trace=[{**ROW, "finish_s": -1.0}], trace_meta=META,
                                  events=["instance 1 died"])
    assert batch.trace is None
    assert batch.events[0] == "instance 1 died"
    assert len(batch.events) == 2 and "trace of iteration 4" in batch.events[1]
    assert "requests.0.finish_s" in batch.events[1] and len(batch.events[1]) <= 1000
    alone = TelemetryClient.build(1, 4, {"x": 1.0}, trace=[{**ROW, "finish_s": -1.0}])
    assert len(alone.events) == 1 and "not sent" in alone.events[0]
