"""A run submitted through the form is dispatched by a real Celery worker to a real
local Ray cluster, rolled out by real vLLM engines on the tiny model, and finishes
its iterations with metrics stored in PostgreSQL."""
import time

import pytest
from django.db import connection

from runs.models import Run
from telemetry.models import IterationTrace, MetricBatch, MetricPoint

from ..conftest import GSM8K

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def test_form_to_finished_run(client, team_user, live_worker, tiny_model_path):
    assert connection.vendor == "postgresql"
    team, user = team_user
    client.force_login(user)
    dataset = str(GSM8K) if GSM8K.exists() else "arith"
    form = {"experiment": "e2e", "model": "tiny", "dataset": dataset, "prompts_per_iteration": "4",
            "group_size": "4", "max_tokens": "24", "iterations": "2", "rollout_instances": "2",
            "max_num_seqs": "16", "learning_rate": "1e-3", "rollout_policy": "static-group"}
    resp = client.post(f"/teams/{team.slug}/runs/new/", form)
    assert resp.status_code == 302, resp.content[:2000]
    run = Run.objects.get()

    deadline = time.time() + 600
    while time.time() < deadline:
        run.refresh_from_db()
        if run.is_terminal:
            break
        time.sleep(2)
    events = list(run.events.values_list("to_state", "reason"))
    assert run.state == "succeeded", f"{events}\n{run.log_tail[-3000:]}\n{live_worker.read_text()[-3000:]}"
    assert [s for s, _ in events] == ["queued", "dispatching", "running", "succeeded"]
    assert run.ray_job_id == f"umbra-run-{run.pk}"

    for name in ("rollout/time_s", "rollout/throughput_tok_s", "rollout/tail_time_s", "reward/mean",
                 "train/loss", "train/kl", "sync/weight_time_s", "rollout/request_latency_s/p90"):
        steps = sorted(MetricPoint.objects.filter(run=run, name=name).values_list("step", flat=True))
        assert steps == [0, 1], name
    assert sorted(MetricBatch.objects.filter(run=run).values_list("seq", flat=True)) == [1, 2]
    for trace in IterationTrace.objects.filter(run=run):
        assert len(trace.requests) == 16
        assert {r["policy_version"] for r in trace.requests} == {trace.iteration}  # on-policy
        assert {r["instance"] for r in trace.requests} == {0, 1}
