"""Faults a run survives on the real stack (form -> Celery -> Ray job -> vLLM, tiny model):
a rollout instance killed mid-iteration, and a killed driver followed by Resume."""
import os
import signal
import time

import pytest

from runs.models import Run
from telemetry.models import IterationTrace, MetricBatch, MetricPoint

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]
KEY_METRICS = ("iteration/time_s", "rollout/time_s", "reward/mean", "train/loss", "sync/weight_time_s")


def _submit(client, team, user, **fields) -> Run:
    client.force_login(user)
    form = {"experiment": "faults", "model": "tiny", "dataset": "arith", "prompts_per_iteration": "8",
            "group_size": "4", "max_tokens": "160", "rollout_instances": "2", "max_num_seqs": "32",
            "learning_rate": "1e-3", "rollout_policy": "seer", "chunk_tokens": "16", **fields}
    resp = client.post(f"/teams/{team.slug}/runs/new/", form)
    assert resp.status_code == 302, resp.content[:2000]
    return Run.objects.latest("pk")


def _wait(what, check, timeout_s: float, run: Run, worker_log=None):
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        run.refresh_from_db()
        if check():
            return
        if run.is_terminal and not check():  # it ended before what we wait for
            break
        time.sleep(0.25)
    events = list(run.events.values_list("kind", "to_state", "reason"))
    tail = worker_log.read_text()[-2000:] if worker_log else ""
    pytest.fail(f"timed out waiting for {what}: state {run.state}\n{events}\n{run.log_tail[-3000:]}\n{tail}")


def _steps(run: Run, name: str) -> list[int]:
    return sorted(MetricPoint.objects.filter(run=run, name=name).values_list("step", flat=True))


def _job(ray_cluster, run: Run):
    from ray.job_submission import JobSubmissionClient

    return JobSubmissionClient(ray_cluster["dashboard"]).get_job_info(run.submission_id)


def test_run_survives_a_rollout_instance_killed_mid_iteration(client, team_user, live_worker, ray_cluster,
                                                              tiny_model_path):
    from ray.util.state import list_actors

    team, user = team_user
    run = _submit(client, team, user, iterations="3")
    _wait("iteration 0", lambda: _steps(run, "iteration/time_s"), 600, run, live_worker)
    job_id = _job(ray_cluster, run).job_id
    alive = [a for a in list_actors(address=ray_cluster["dashboard"], filters=[("state", "=", "ALIVE")], limit=1000)
             if a.class_name == "RolloutInstance" and a.job_id == job_id]
    assert len(alive) == 2, alive
    os.kill(alive[1].pid, signal.SIGKILL)  # iteration 1's rollout starts right after iteration 0's metrics

    _wait("the run to end", lambda: run.is_terminal, 600, run, live_worker)
    assert run.state == "succeeded", run.log_tail[-3000:]
    for name in KEY_METRICS:
        assert _steps(run, name) == [0, 1, 2], name
    lost = MetricPoint.objects.filter(run=run, name="rollout/instances_lost").values_list("step", "value")
    assert sorted(v for _, v in lost) == [0.0, 0.0, 1.0], list(lost)  # died in one rollout, replaced after it
    assert MetricPoint.objects.get(run=run, name="rollout/redispatched_chunks", step=1).value >= 1
    notes = list(run.events.filter(kind="job").values_list("reason", flat=True))
    assert len(notes) == 1 and "died during the rollout of iteration 1" in notes[0] and "replacement" in notes[0]
    for trace in IterationTrace.objects.filter(run=run):  # every request of every group exactly once
        assert sorted((r["group"], r["index"]) for r in trace.requests) == [(g, i) for g in range(8) for i in range(4)]
    # the replacement served the last iteration: both instance ids sampled, on-policy
    last = IterationTrace.objects.get(run=run, iteration=2)
    assert {r["instance"] for r in last.requests} == {0, 1}
    assert {r["policy_version"] for r in last.requests} == {2}


def test_killed_driver_fails_fast_and_resume_continues_from_the_checkpoint(client, team_user, live_worker,
                                                                          ray_cluster, tiny_model_path):
    team, user = team_user
    run = _submit(client, team, user, iterations="6", checkpoint_every="2", max_tokens="48")
    # The checkpoint after iteration 3 is committed before iteration 4 starts.
    _wait("iteration 4", lambda: 4 in _steps(run, "iteration/time_s"), 600, run, live_worker)
    info = _job(ray_cluster, run)
    assert info.driver_info and info.driver_info.pid
    killed_at = time.time()
    os.kill(int(info.driver_info.pid), signal.SIGKILL)
    _wait("the run to fail", lambda: run.is_terminal, 30, run, live_worker)
    assert run.state == "failed" and time.time() - killed_at < 30
    reason = run.events.last().reason
    assert reason.strip(), "a failed run says why"
    before = dict(MetricPoint.objects.filter(run=run, name="iteration/time_s").values_list("step", "wall_time"))

    resp = client.post(f"/runs/{run.pk}/resume/")
    assert resp.status_code == 302
    resumed_at = time.time()
    _wait("the resumed run to end", lambda: run.is_terminal and run.attempt == 1, 600, run, live_worker)
    assert run.state == "succeeded", run.log_tail[-3000:]
    assert run.ray_job_id == f"umbra-run-{run.pk}-a1"
    for name in KEY_METRICS:  # no gap, no duplicate
        assert _steps(run, name) == list(range(6)), name
    after = dict(MetricPoint.objects.filter(run=run, name="iteration/time_s").values_list("step", "wall_time"))
    assert all(after[s] == before[s] for s in range(4))  # kept from the first attempt
    assert all(after[s].timestamp() > resumed_at - 1 for s in (4, 5))  # iterations 4.. ran again
    seqs = sorted(MetricBatch.objects.filter(run=run).values_list("seq", flat=True))
    assert seqs == list(range(1, len(seqs) + 1))
    notes = list(run.events.filter(kind="job").values_list("reason", flat=True))
    assert any("resumed from the checkpoint after iteration 3" in n for n in notes), notes
    states = [s for k, s in run.events.values_list("kind", "to_state") if k == "state"]
    assert states[-5:] == ["failed", "queued", "dispatching", "running", "succeeded"]
