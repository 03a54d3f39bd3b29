"""Faults of the run lifecycle on the real stack (PostgreSQL, Redis, Celery, Ray, vLLM on
the tiny model): Celery workers killed (SIGKILL, their whole process group) while they
dispatch a run, then the run cancelled from its dashboard while a recovered worker follows it.

(A worker killed while it *follows* a run is tested on the two-node run, test_two_nodes.py.)
The test starts its own workers on a queue of its own, so the session's worker never takes
its tasks."""
import os
import re
import socket
import time

import psutil
import pytest

from runs.models import Experiment, Run, RunEvent
from runs.tasks import dispatch_run
from umbra.config import RunConfig

from ..conftest import free_port
from .celery_worker import Worker

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

# Its own Celery queue (after the suite's, so two suites on one machine stay apart).
QUEUE = f"{os.environ.get('UMBRA_CELERY_QUEUE', 'umbra-test')}-faults"


@pytest.fixture
def start_worker(live_web, ray_cluster, checkpoint_root, tmp_path):
    """Start a Worker on QUEUE (``start_worker(name, ray_address=None)``); all are killed at the end."""
    started = []

    def start(name: str, ray_address: str | None = None) -> Worker:
        worker = Worker(tmp_path / f"{name}.log", QUEUE, ray_address or ray_cluster["dashboard"], live_web,
                        checkpoint_root)
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.kill()


@pytest.fixture
def to_faults_queue(monkeypatch):
    """This test process sends its tasks (the dashboard's cancel) to QUEUE."""
    from umbra_site.celery import app

    monkeypatch.setitem(app.conf, "task_default_queue", QUEUE)


@pytest.fixture
def jobs(ray_cluster):
    """A JobSubmissionClient on the test cluster; stops the test's jobs left running."""
    from ray.job_submission import JobSubmissionClient

    client = JobSubmissionClient(ray_cluster["dashboard"])
    before = {j.submission_id for j in client.list_jobs()}
    yield client
    for job in client.list_jobs():
        if job.submission_id not in before and str(job.status) in ("PENDING", "RUNNING"):
            client.stop_job(job.submission_id)


def queued_run(team_user, iterations: int) -> Run:
    """A queued run of the tiny model, stored as create_run stores it but not enqueued
    (create_run would enqueue on the session worker's queue). One rollout instance: the
    faults here are the platform's, not the rollout's."""
    team, user = team_user
    config = RunConfig(model="tiny", dataset="arith", prompts_per_iteration=4, group_size=4, max_tokens=24,
                       iterations=iterations, rollout_instances=1, max_num_seqs=16, learning_rate=1e-3,
                       rollout_policy="static-group", checkpoint_every=0)
    exp = Experiment.objects.create(team=team, name="faults")
    run = Run.objects.create(experiment=exp, config=config.model_dump(), created_by=user)
    RunEvent.objects.create(run=run, from_state="", to_state=Run.State.QUEUED, reason="submitted")
    return run


def run_jobs(client, run: Run) -> list:
    """Every Ray job of ``run`` on the cluster (any attempt, any state)."""
    pattern = re.compile(rf"umbra-run-{run.pk}(-a\d+)?")
    return [j for j in client.list_jobs() if j.submission_id and pattern.fullmatch(j.submission_id)]


def wait_for(predicate, timeout_s: float, what: str, poll_s: float = 0.2):
    """Poll ``predicate`` until it returns something truthy (returned); fail after ``timeout_s``."""
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(poll_s)
    raise AssertionError(f"not within {timeout_s}s: {what}")


def state_of(run: Run) -> str:
    run.refresh_from_db()
    return run.state


def events_of(run: Run) -> list[str]:
    """The run's state transitions (a job note posted before the follower records `running`
    carries the state of its moment, `dispatching`, and is not a transition)."""
    return list(run.events.filter(kind=RunEvent.Kind.STATE).values_list("to_state", flat=True))


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_worker_killed_while_dispatching_then_cancel_stops_job_and_actors_within_10s(
        client, team_user, start_worker, to_faults_queue, jobs, ray_cluster, tiny_model_path):
    from ray.util.state import list_actors

    run = queued_run(team_user, iterations=1000)  # runs until it is cancelled
    # A cluster address that accepts connections and never answers: the first worker
    # hangs inside dispatch, after `dispatching` was recorded and before anything was submitted.
    silent = socket.socket()
    silent.bind(("127.0.0.1", free_port()))
    silent.listen(16)
    try:
        dispatch_run.apply_async((run.pk,), queue=QUEUE)
        first = start_worker("hung", ray_address=f"http://127.0.0.1:{silent.getsockname()[1]}")
        wait_for(lambda: state_of(run) == "dispatching", 60, f"dispatching\n{first.log()}")
        time.sleep(1)
        first.kill()
    finally:
        silent.close()
    assert run_jobs(jobs, run) == []

    # The next worker takes the run up and submits it; it is killed as soon as the job
    # exists, usually before its first follow poll (1 s later) and while it still holds the
    # dispatch lease (the next dispatcher waits for it to lapse); either way nothing
    # follows the run any more.
    second = start_worker("submitter")
    wait_for(lambda: run_jobs(jobs, run), 90, f"a Ray job\n{second.log()}", poll_s=0.05)
    second.kill()

    third = start_worker("follower")
    wait_for(lambda: state_of(run) in ("running", "succeeded"), 180,
             f"running; events {events_of(run)}\n{third.log()}")
    found = run_jobs(jobs, run)
    assert [j.submission_id for j in found] == [f"umbra-run-{run.pk}"], found
    assert str(found[0].status) in ("RUNNING", "SUCCEEDED")
    assert events_of(run)[:3] == ["queued", "dispatching", "running"]

    # Cancel from the dashboard while the third worker follows the run (it runs the cancel
    # task too): the job stops, its driver, actors and engine processes are gone within 10 s,
    # and the follower records `cancelled`.
    team, user = team_user
    client.force_login(user)
    # The job's Ray job id is known once its driver has connected.
    job_id = wait_for(lambda: jobs.get_job_info(run.submission_id).job_id, 120, "the driver connected", poll_s=0.25)

    def job_actors(alive_only: bool = True) -> list:
        found = list_actors(address=ray_cluster["dashboard"], filters=[("job_id", "=", job_id)], limit=1000)
        return [a for a in found if a.state != "DEAD"] if alive_only else found

    # One rollout instance: its actor and engine processes are what must go (a second adds nothing).
    wait_for(lambda: sum(a.class_name == "RolloutInstance" and a.state == "ALIVE" for a in job_actors()) == 1,
             300, "the rollout instance alive", poll_s=0.5)
    # Every process of the job: its driver, its actors and their children (vLLM engine cores).
    pids = {a.pid for a in job_actors() if a.pid}
    driver = jobs.get_job_info(run.submission_id).driver_info
    if driver and driver.pid:
        pids.add(int(driver.pid))
    pids |= {c.pid for p in list(pids) if _alive(p) for c in psutil.Process(p).children(recursive=True)}
    assert len(pids) >= 3, pids

    t0 = time.time()
    assert client.post(f"/runs/{run.pk}/cancel/").status_code == 302

    def all_gone() -> bool:
        return (str(jobs.get_job_status(run.submission_id)) == "STOPPED" and not job_actors()
                and not [p for p in pids if _alive(p)] and state_of(run) == "cancelled")

    deadline = t0 + 10
    while time.time() < deadline and not all_gone():
        time.sleep(0.2)
    took = time.time() - t0
    assert all_gone(), (f"after {took:.1f}s: job {jobs.get_job_status(run.submission_id)}, run {run.state}, "
                        f"actors {[(a.class_name, a.state) for a in job_actors()]}, "
                        f"processes {[p for p in pids if _alive(p)]}\n{third.log()}")
    assert events_of(run)[-1] == "cancelled"
    print(f"cancel took {took:.1f}s")
    # exactly one Ray job in all: no duplicate submission by any of the three workers
    assert [j.submission_id for j in run_jobs(jobs, run)] == [f"umbra-run-{run.pk}"]
