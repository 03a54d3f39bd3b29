"""A run submitted through the form is dispatched by a real Celery worker to a real Ray
cluster, rolled out by real vLLM engines on the tiny model, and finishes its iterations
with metrics stored in PostgreSQL; beyond one machine: the worker's RAY_ADDRESS points at a
cluster of two nodes (the session's head and a worker node joined to it, separate ``ray start``
processes), and the run's rollout instances are placed on both nodes; and the Celery
worker that follows the run is SIGKILLed mid-run, and a worker started later takes it up.

One job proves the three claims (they were three tests: test_run_end_to_end.py, this one,
and test_worker_faults.py::test_worker_killed_while_following)."""
import json
import os
import re
import shutil
import subprocess
import tempfile
import time

import pytest
from django.db import connection
from ray.util.state.exception import RayStateApiException

from runs.models import Run
from telemetry.models import IterationTrace, MetricBatch, MetricPoint

from ..conftest import GSM8K, VENV_BIN, _env, _stop, free_ports
from .celery_worker import Worker

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

# Its own Celery queue (after the suite's, so two suites on one machine stay apart): the
# test kills the workers that take this run, never the session's live_worker.
QUEUE = f"{os.environ.get('UMBRA_CELERY_QUEUE', 'umbra-test')}-two-nodes"
# The session's Ray head is one node; the node joined to it here has a custom resource of its own.
HEAD, WORKER_RESOURCE = "head", "umbra_worker_node"


def _node_ports() -> list[str]:
    """Own ports for every per-node agent, so two nodes (and other clusters) share the machine."""
    names = ("dashboard-agent-listen", "dashboard-agent-grpc", "metrics-export", "runtime-env-agent",
             "node-manager", "object-manager")
    return [f"--{name}-port={port}" for name, port in zip(names, free_ports(len(names)))]


def _alive_nodes(dashboard: str) -> dict[str, str]:
    """Alive node id (hex) -> HEAD, WORKER_RESOURCE or "?" (neither).

    Raises ``RayStateApiException`` while the state API does not answer."""
    from ray.util.state import list_nodes

    out = {}
    for node in list_nodes(address=dashboard, filters=[("state", "=", "ALIVE")], detail=True, timeout=30):
        out[node.node_id] = (HEAD if node.is_head_node else
                             WORKER_RESOURCE if WORKER_RESOURCE in (node.resources_total or {}) else "?")
    return out


@pytest.fixture(scope="module")
def two_node_cluster(ray_cluster, tmp_path_factory):
    """The session's Ray head and, for this module, a worker node joined to it (``ray start
    --address``, 2 CPUs, a process of its own as on another machine); the worker node leaves
    at the end. (Its own head is not needed: the session's serves, and saves starting one.)

    Yields ``{"gcs", "dashboard", "nodes": {node id: HEAD or WORKER_RESOURCE}}``.
    """
    logs = tmp_path_factory.mktemp("ray2")
    # A short temp dir of its own: Ray's unix socket paths must stay under ~107 characters.
    temp = tempfile.mkdtemp(prefix="u2n-", dir="/tmp")
    dashboard = ray_cluster["dashboard"]
    worker = subprocess.Popen(
        [str(VENV_BIN / "ray"), "start", f"--address={ray_cluster['gcs']}", "--block", "--num-cpus=2",
         "--object-store-memory=300000000", "--disable-usage-stats",
         f"--resources={json.dumps({WORKER_RESOURCE: 1})}", f"--temp-dir={temp}", *_node_ports()],
        # a loaded 2-core machine registered the node after Ray's own 60 s once (CI): more room
        env=_env(RAY_raylet_start_wait_time_s=240), stdout=open(logs / "worker.log", "w"),
        stderr=subprocess.STDOUT)
    try:
        deadline, nodes, error = time.time() + 300, {}, None
        while time.time() < deadline and sorted(nodes.values()) != [HEAD, WORKER_RESOURCE]:
            assert worker.poll() is None, (logs / "worker.log").read_text()[-2000:]
            time.sleep(0.5)
            try:
                nodes = _alive_nodes(dashboard)
            except RayStateApiException as exc:
                error = exc
        assert sorted(nodes.values()) == [HEAD, WORKER_RESOURCE], (
            f"nodes {nodes}, last state API error {error}\nworker: {(logs / 'worker.log').read_text()[-2000:]}")
        yield {"gcs": ray_cluster["gcs"], "dashboard": dashboard, "nodes": nodes}
    finally:
        _stop(worker)
        shutil.rmtree(temp, ignore_errors=True)


@pytest.fixture
def start_worker(live_web, two_node_cluster, checkpoint_root, tmp_path):
    """Start a Celery worker on QUEUE that submits runs to the two-node cluster (its
    RAY_ADDRESS); ``start_worker(name)``; all are killed at the end."""
    started = []

    def start(name: str) -> Worker:
        worker = Worker(tmp_path / f"{name}.log", QUEUE, two_node_cluster["dashboard"], live_web, checkpoint_root)
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.kill()


@pytest.fixture
def to_two_node_queue(monkeypatch):
    """This test process sends its tasks (the run's dispatch) to QUEUE."""
    from umbra_site.celery import app

    monkeypatch.setitem(app.conf, "task_default_queue", QUEUE)


def test_run_on_two_nodes(client, team_user, two_node_cluster, start_worker, to_two_node_queue, tiny_model_path):
    from ray.job_submission import JobSubmissionClient
    from ray.util.state import list_actors

    assert connection.vendor == "postgresql"
    team, user = team_user
    client.force_login(user)
    dataset = str(GSM8K) if GSM8K.exists() else "arith"  # a data set file (UMBRA_DATA_DIRS) where there is one
    form = {"experiment": "two-nodes", "model": "tiny", "dataset": dataset, "prompts_per_iteration": "4",
            "group_size": "4", "max_tokens": "24", "iterations": "2", "rollout_instances": "2",
            "max_num_seqs": "16", "learning_rate": "1e-3", "rollout_policy": "static-group"}
    first = start_worker("first")
    resp = client.post(f"/teams/{team.slug}/runs/new/", form)
    assert resp.status_code == 302, resp.content[:2000]
    run = Run.objects.get()

    # The Celery worker that dispatched the run is SIGKILLed (its whole process group) while
    # it follows the run: nobody follows now, the job keeps running on Ray and the run stays
    # `running`; a worker started later takes the run up (recover_runs) and follows it to the end.
    deadline = time.time() + 120
    while time.time() < deadline and run.state != "running":
        time.sleep(0.2)
        run.refresh_from_db()
    assert run.state == "running", f"{run.state}: {list(run.events.values_list('to_state', 'reason'))}\n{first.log()}"
    first.kill()
    time.sleep(5)
    assert str(JobSubmissionClient(two_node_cluster["dashboard"]).get_job_status(run.submission_id)) == "RUNNING"
    run.refresh_from_db()
    assert run.state == "running"
    second = start_worker("second")

    deadline = time.time() + 600
    while time.time() < deadline and not run.is_terminal:
        time.sleep(0.5)
        run.refresh_from_db()
    events = list(run.events.values_list("to_state", "reason"))
    assert run.state == "succeeded", f"{events}\n{run.log_tail[-3000:]}\n{second.log()}"
    # state changes only: job notes (the system telemetry names the actors) sit beside them
    states = list(run.events.filter(kind="state").values_list("to_state", flat=True))
    assert states == ["queued", "dispatching", "running", "succeeded"], events
    assert run.ray_job_id == f"umbra-run-{run.pk}"
    # exactly one Ray job: the second worker did not submit the run again
    jobs = [j.submission_id for j in JobSubmissionClient(two_node_cluster["dashboard"]).list_jobs()
            if j.submission_id and re.fullmatch(rf"umbra-run-{run.pk}(-a\d+)?", j.submission_id)]
    assert jobs == [f"umbra-run-{run.pk}"], jobs
    for name in ("rollout/time_s", "rollout/throughput_tok_s", "rollout/tail_time_s", "reward/mean",
                 "train/loss", "train/kl", "sync/weight_time_s", "rollout/request_latency_s/p90"):
        assert sorted(MetricPoint.objects.filter(run=run, name=name).values_list("step", flat=True)) == [0, 1], name
    assert sorted(MetricBatch.objects.filter(run=run).values_list("seq", flat=True)) == [1, 2]
    traces = list(IterationTrace.objects.filter(run=run))
    assert sorted(t.iteration for t in traces) == [0, 1]
    for trace in traces:
        assert len(trace.requests) == 16
        assert {r["instance"] for r in trace.requests} == {0, 1}
        # on-policy on both nodes: the weight sync reached the worker node's instance too
        assert {r["policy_version"] for r in trace.requests} == {trace.iteration}

    # Placement, as Ray saw it: one rollout instance per node.
    nodes = two_node_cluster["nodes"]
    job_id = JobSubmissionClient(two_node_cluster["dashboard"]).get_job_info(run.submission_id).job_id
    actors = list_actors(address=two_node_cluster["dashboard"],
                         filters=[("class_name", "=", "RolloutInstance"), ("job_id", "=", job_id)])
    assert len(actors) == 2 and {a.node_id for a in actors} == set(nodes), [(a.node_id, a.state) for a in actors]
    # ...and as the job's log reports it.
    job_log = JobSubmissionClient(two_node_cluster["dashboard"]).get_job_logs(run.submission_id)
    logged = {line.rsplit(" ", 1)[-1] for line in job_log.splitlines() if "rollout instance " in line
              and " on node " in line}
    assert logged == set(nodes), job_log[-3000:]
