"""Faults a run survives on the real stack (form -> Celery -> Ray job -> vLLM, tiny model):
a rollout instance killed mid-iteration, then the job's driver killed, then Resume, then
Cancel and Resume again, then a trainer rank killed mid-step and Resume. The run validates
after every iteration, so the same job shows ``val/*`` metrics reaching the platform.

Every fault hits one run (one Ray job and its resumed attempts instead of five jobs): the
instance dies in iteration 1, the driver in iteration 3, after the checkpoint that follows
iteration 1; the resumed attempt re-runs iterations 2 and 3 and is cancelled once the
checkpoint after iteration 3 is in force; in the next attempt a trainer rank dies in a GRPO
step, and the last attempt runs 4 and 5. The trainer runs as 2 ranks (``trainer_ranks``), so
each Resume loads a sharded checkpoint."""
import os
import signal
import subprocess
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from runs.models import Run
from telemetry.models import IterationTrace, MetricBatch, MetricPoint

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]
KEY_METRICS = ("iteration/time_s", "rollout/time_s", "reward/mean", "train/loss", "sync/weight_time_s",
               "sync/weight_bytes")
VAL_METRICS = ("val/accuracy", "val/reward_mean", "val/response_len/mean")
# the example countdown reward's dict result: its extra numbers, and no reward errors
REWARD_METRICS = ("reward/errors", "reward/extra/format", "reward/extra/correct")
PROMPTS, GROUP = 4, 4
ITERATIONS = 6


def _submit(client, team, user, **fields) -> Run:
    client.force_login(user)
    # At most 4 sequences per engine: each rollout takes a few seconds (the instance is
    # killed while chunks run on it) while a GRPO step trains only 16 responses.
    form = {"experiment": "faults", "model": "tiny", "dataset": "arith", "prompts_per_iteration": str(PROMPTS),
            "group_size": str(GROUP), "max_tokens": "160", "rollout_instances": "2", "max_num_seqs": "4",
            "learning_rate": "1e-3", "rollout_policy": "seer", "chunk_tokens": "16", **fields}
    resp = client.post(f"/teams/{team.slug}/runs/new/", form)
    assert resp.status_code == 302, resp.content[:2000]
    return Run.objects.latest("pk")


def _wait(what, check, timeout_s: float, run: Run, worker_log=None, poll_s: float = 0.25):
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        run.refresh_from_db()
        if check():
            return
        if run.is_terminal and not check():  # it ended before what we wait for
            break
        time.sleep(poll_s)
    events = list(run.events.values_list("kind", "to_state", "reason"))
    tail = worker_log.read_text()[-2000:] if worker_log else ""
    pytest.fail(f"timed out waiting for {what}: state {run.state}\n{events}\n{run.log_tail[-3000:]}\n{tail}")


def _steps(run: Run, name: str) -> list[int]:
    return sorted(MetricPoint.objects.filter(run=run, name=name).values_list("step", flat=True))


def _job(ray_cluster, run: Run):
    from ray.job_submission import JobSubmissionClient

    return JobSubmissionClient(ray_cluster["dashboard"]).get_job_info(run.submission_id)


def _trainer_ranks_in_a_step() -> list[int]:
    """Pids of the processes that run a trainer rank's GRPO step now (Ray titles an actor's
    process by the method it runs)."""
    out = subprocess.run(["ps", "-eo", "pid=,args="], capture_output=True, text=True).stdout
    return [int(line.split()[0]) for line in out.splitlines() if "ray::GRPOTrainer.train_step" in line]


def _gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"  # a zombie holds nothing
    except FileNotFoundError:
        return True


def _every_request_once(trace) -> bool:
    return sorted((r["group"], r["index"]) for r in trace.requests) == [
        (g, i) for g in range(PROMPTS) for i in range(GROUP)]


def test_run_survives_a_killed_instance_and_a_killed_driver_and_resumes_from_the_checkpoint(
        client, team_user, live_worker, ray_cluster, tiny_model_path, checkpoint_root):
    from ray.util.state import list_actors

    team, user = team_user
    # Validation after every iteration on a held-out 1% of the set (5 prompts x 2 greedy responses).
    # The generated countdown task, scored by the example custom reward in the reward pool.
    # The trainer is 2 FSDP2 ranks: the weight sync gathers from shards, the checkpoint is sharded.
    run = _submit(client, team, user, iterations=str(ITERATIONS), checkpoint_every="2", val_fraction="0.01",
                  val_every="1", val_samples="2", dataset="countdown", reward="countdown.py:compute_score",
                  trainer_ranks="2")
    assert run.config["trainer_ranks"] == 2
    assert run.config["reward"].endswith("examples/rewards/countdown.py:compute_score")

    # 1. A rollout instance (its vLLM actor process) is SIGKILLed during iteration 1's rollout,
    #    which starts right after iteration 0's metrics are delivered and a liveness probe of
    #    the instances (kill it just after that probe, while chunks run on it).
    job = {}

    def driver_connected():
        job["info"] = _job(ray_cluster, run) if run.state == "running" else None
        return job["info"] and job["info"].job_id and job["info"].driver_info and job["info"].driver_info.pid

    _wait("the job's driver", driver_connected, 600, run, live_worker)
    info = job["info"]

    def instances_alive():
        return [a for a in list_actors(address=ray_cluster["dashboard"], filters=[("state", "=", "ALIVE")],
                                       limit=1000) if a.class_name == "RolloutInstance" and a.job_id == info.job_id]

    _wait("two rollout instances", lambda: len(instances_alive()) >= 2, 600, run, live_worker, poll_s=2)
    alive = instances_alive()
    assert len(alive) == 2, alive
    _wait("iteration 0", lambda: _steps(run, "iteration/time_s"), 600, run, live_worker, poll_s=0.1)
    time.sleep(0.5)  # the probe takes milliseconds, the rollout seconds
    os.kill(alive[1].pid, signal.SIGKILL)

    # 2. The driver is SIGKILLed once iteration 2's metrics are in: the checkpoint after
    #    iteration 1 was committed before iteration 2 started, and none follows iteration 2.
    _wait("iteration 2", lambda: 2 in _steps(run, "iteration/time_s"), 600, run, live_worker, poll_s=0.1)
    killed_at = time.time()
    os.kill(int(info.driver_info.pid), signal.SIGKILL)
    # The replacement instance served iteration 2 (read now: the resumed attempt replaces
    # iteration 2's trace): both instance ids sampled, on-policy, every request once.
    served = IterationTrace.objects.get(run=run, iteration=2)
    assert {r["instance"] for r in served.requests} == {0, 1}
    assert {r["policy_version"] for r in served.requests} == {2}
    assert _every_request_once(served)

    _wait("the run to fail", lambda: run.is_terminal, 30, run, live_worker, poll_s=0.1)
    assert run.state == "failed" and time.time() - killed_at < 30
    reason = run.events.last().reason
    assert reason.strip(), "a failed run says why"
    before = dict(MetricPoint.objects.filter(run=run, name="iteration/time_s").values_list("step", "wall_time"))

    # 3. Resume: a new attempt loads the checkpoint after iteration 1 and re-runs 2 and 3.
    resp = client.post(f"/runs/{run.pk}/resume/")
    assert resp.status_code == 302
    resumed_at = time.time()

    # 4. Cancel (the run page's button) once that attempt's checkpoint after iteration 3 is in
    #    force, while iteration 4 runs (a cancel in the middle of a save: tests/unit/test_checkpoint.py).
    latest = checkpoint_root / f"run-{run.pk}" / "latest"
    _wait("the checkpoint after iteration 3",
          lambda: run.attempt == 1 and latest.exists() and latest.read_text() == "it-000003",
          600, run, live_worker, poll_s=0.1)
    assert client.post(f"/runs/{run.pk}/cancel/").status_code == 302
    _wait("the cancel", lambda: run.state == "cancelled", 60, run, live_worker)
    assert run.ray_job_id == f"umbra-run-{run.pk}-a1"
    cancelled = dict(MetricPoint.objects.filter(run=run, name="iteration/time_s").values_list("step", "wall_time"))

    # 5. Resume again; a trainer rank is SIGKILLed in the middle of a GRPO step (iteration 4 or
    #    5): the run fails within seconds, naming the rank and its process, and neither rank's
    #    process is left behind.
    assert client.post(f"/runs/{run.pk}/resume/").status_code == 302
    second_resume_at = time.time()
    in_step = {}

    def a_rank_in_a_step():
        in_step["pids"] = _trainer_ranks_in_a_step() if run.attempt == 2 and run.state == "running" else []
        return in_step["pids"]

    _wait("a trainer rank in a GRPO step", a_rank_in_a_step, 600, run, live_worker, poll_s=0.02)
    trainer_pids = [int(p) for p in subprocess.run(["pgrep", "-f", "^ray::GRPOTrainer"], capture_output=True,
                                                   text=True).stdout.split()]
    victim = in_step["pids"][0]
    # a job's notes travel with its iteration's metrics: this attempt's resume note reached the
    # platform only if it finished iteration 4 before its rank died (in iteration 5's step)
    attempt_delivered = MetricPoint.objects.filter(run=run, name="iteration/time_s", step=4,
                                                   wall_time__gt=datetime.fromtimestamp(second_resume_at - 1,
                                                                                        timezone.utc)).exists()
    killed_at = time.time()
    os.kill(victim, signal.SIGKILL)
    _wait("the run to fail", lambda: run.is_terminal, 60, run, live_worker, poll_s=0.1)
    assert run.state == "failed" and time.time() - killed_at < 60
    reason = run.events.filter(kind="state").last().reason
    assert "trainer rank" in reason and f"(pid {victim})" in reason, reason
    deadline = time.time() + 30
    while time.time() < deadline and not all(_gone(p) for p in trainer_pids):
        time.sleep(0.2)
    assert all(_gone(p) for p in trainer_pids), f"trainer ranks left: {trainer_pids}"

    # 6. Resume once more: the last attempt loads the checkpoint after iteration 3 and runs 4 and 5.
    assert client.post(f"/runs/{run.pk}/resume/").status_code == 302
    resumed_again_at = time.time()
    _wait("the resumed run to end", lambda: run.is_terminal and run.attempt == 3, 600, run, live_worker)
    assert run.state == "succeeded", run.log_tail[-3000:]
    assert run.ray_job_id == f"umbra-run-{run.pk}-a3"
    for name in KEY_METRICS + VAL_METRICS + REWARD_METRICS:  # no gap, no duplicate
        assert _steps(run, name) == list(range(ITERATIONS)), name
    val = {name: list(MetricPoint.objects.filter(run=run, name=name).values_list("value", flat=True))
           for name in VAL_METRICS}
    assert all(0.0 <= v <= 1.0 for v in val["val/accuracy"] + val["val/reward_mean"]), val
    assert all(0 < v <= 160 for v in val["val/response_len/mean"]), val  # at most max_tokens
    assert set(MetricPoint.objects.filter(run=run, name="reward/errors").values_list("value", flat=True)) == {0.0}
    assert all(0.0 <= v <= 1.0 for v in MetricPoint.objects.filter(run=run, name="reward/extra/format")
               .values_list("value", flat=True))
    after = dict(MetricPoint.objects.filter(run=run, name="iteration/time_s").values_list("step", "wall_time"))
    assert all(after[s] == before[s] for s in (0, 1))  # kept from the first attempt
    assert all(after[s].timestamp() > resumed_at - 1 for s in (2, 3))  # iterations 2.. ran again
    assert all(after[s] == cancelled[s] for s in (2, 3))  # kept from the cancelled attempt
    assert all(after[s].timestamp() > resumed_again_at - 1 for s in (4, 5))  # iterations 4.. ran again
    seqs = sorted(MetricBatch.objects.filter(run=run).values_list("seq", flat=True))
    assert seqs == list(range(1, len(seqs) + 1))
    states = [s for k, s in run.events.values_list("kind", "to_state") if k == "state"]
    assert states[-13:] == ["failed", "queued", "dispatching", "running", "cancelled",
                            "queued", "dispatching", "running", "failed", "queued", "dispatching", "running",
                            "succeeded"]

    # The instance loss, as the run's history keeps it (steps 0 and 1 are the first attempt's).
    lost = MetricPoint.objects.filter(run=run, name="rollout/instances_lost").values_list("step", "value")
    assert sorted(lost) == [(s, 1.0 if s == 1 else 0.0) for s in range(ITERATIONS)], list(lost)  # one rollout
    assert MetricPoint.objects.get(run=run, name="rollout/redispatched_chunks", step=1).value >= 1
    notes = [n for n in run.events.filter(kind="job").values_list("reason", flat=True)
             if not n.startswith("system: ")]  # the system telemetry's notes (actor ids, memory) aside
    # the instance replaced once (not again between iterations), three resumes
    assert len(notes) == (4 if attempt_delivered else 3), (attempt_delivered, notes)
    assert "died during the rollout of iteration 1" in notes[0] and "replacement" in notes[0], notes
    assert "resumed from the checkpoint after iteration 1 (policy version 2)" in notes[1], notes
    assert all("resumed from the checkpoint after iteration 3 (policy version 4)" in n for n in notes[2:]), notes
    traces = list(IterationTrace.objects.filter(run=run).order_by("iteration"))
    assert [t.iteration for t in traces] == list(range(ITERATIONS))
    for trace in traces:  # every request of every group exactly once, the killed rollout's too
        assert _every_request_once(trace), trace.iteration
    # the last attempt's instances got the checkpoint's weights and the policy version went on
    # from it: its last rollout is on-policy
    assert {r["policy_version"] for r in traces[-1].requests} == {ITERATIONS - 1}
    assert {r["instance"] for r in traces[-1].requests} == {0, 1}
