"""What the platform pushes to dashboards is built from the message models of
umbra.telemetry.messages (one definition of each shape, shared with frontend/src/types.ts)."""
import json

import pytest

from umbra.telemetry import messages
from umbra.telemetry.wire import BatchIn

pytestmark = pytest.mark.django_db


@pytest.fixture
def pushed(monkeypatch):
    """Every message the telemetry services push, as (run id, message)."""
    sent = []
    monkeypatch.setattr("telemetry.services.broadcast", lambda run_id, message: sent.append((run_id, message)))
    return sent


def test_an_ingested_batch_is_pushed_as_message_models(running_run, pushed):
    from telemetry.services import ingest

    run, _ = running_run
    row = {"group": 0, "index": 0, "instance": 1, "start_s": 0.0, "finish_s": 1.2, "output_tokens": 9,
           "finish_reason": "stop", "policy_version": 0, "chunks": [[1, 0.0, 1.2, 9]]}
    batch = BatchIn.model_validate_json(json.dumps({
        "seq": 1, "points": [{"name": "rollout/time_s", "step": 0, "value": 1.5}], "events": ["instance 1 died"],
        "trace": {"iteration": 0, "requests": [row]}}))
    assert ingest(run, batch)
    by_type = {type(m): m for _, m in pushed}
    assert set(by_type) == {messages.MetricsMessage, messages.EventsMessage, messages.TraceMessage}
    assert json.loads(by_type[messages.MetricsMessage].model_dump_json()) == {
        "type": "metrics", "points": [{"name": "rollout/time_s", "step": 0, "value": 1.5}]}
    note = json.loads(by_type[messages.EventsMessage].model_dump_json())["events"][0]
    assert note["kind"] == "job" and note["reason"] == "instance 1 died" and note["at"]
    trace = json.loads(by_type[messages.TraceMessage].model_dump_json())
    assert trace["type"] == "trace" and trace["requests"][0]["chunks"] == [[1, 0.0, 1.2, 9]] and trace["meta"] is None


def test_a_state_change_pushes_a_state_message(team_user, monkeypatch, django_capture_on_commit_callbacks):
    from runs.services import transition
    from tests import factories

    team, user = team_user
    run = factories.run(factories.experiment(team, "states"), created_by=user)  # queued
    texts = []
    monkeypatch.setattr("telemetry.broadcast.async_to_sync",
                        lambda send: lambda group, event: texts.append((group, event["text"])))
    with django_capture_on_commit_callbacks(execute=True):  # a move to a live state: no Celery work after it
        assert transition(run.pk, "dispatching", "submitting")
    # to the run's dashboards, and to its team's runs table
    assert [(g, json.loads(t)) for g, t in texts] == [
        (f"run-{run.pk}", {"type": "state", "state": "dispatching", "reason": "submitting"}),
        (f"team-runs-{team.pk}", {"type": "run_row", "run": run.pk, "state": "dispatching", "values": {},
                                  "iterations_done": None})]


def test_a_message_that_fits_no_model_is_logged_not_sent(monkeypatch, caplog):
    from telemetry.broadcast import broadcast

    texts = []
    monkeypatch.setattr("telemetry.broadcast.async_to_sync", lambda send: lambda group, event: texts.append(event))
    broadcast(1, {"type": "state", "state": "failed", "why": "a stray key"})
    assert texts == [] and "push to dashboards of run 1 failed" in caplog.text
