"""Shared fixtures: the tiny model, a dedicated local Ray head, and live platform
processes (daphne for HTTP + WebSocket, a Celery worker) on the test database.

Everything here is real: the services are started, not faked.
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import requests
import yaml

ROOT = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent
GSM8K = ROOT.parent / "shared" / "data" / "gsm8k" / "test.jsonl"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def free_ports(n: int) -> list[int]:
    """``n`` distinct free ports: the sockets stay bound until all are chosen (one by one,
    the OS may hand the same port out twice: Ray then refuses two agents on one port)."""
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def wait_http(url: str, timeout_s: float, proc: subprocess.Popen | None = None) -> None:
    """Wait until ``url`` answers any HTTP status; fail if ``proc`` dies first."""
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{proc.args[0]} exited with {proc.returncode}")
        try:
            requests.get(url, timeout=2)
            return
        except requests.RequestException:
            time.sleep(0.5)
    raise TimeoutError(f"{url} did not answer within {timeout_s}s")


def _env(**extra) -> dict:
    env = dict(os.environ)
    env["PATH"] = f"{VENV_BIN}:{env.get('PATH', '')}"
    env["PYTHONPATH"] = f"{ROOT / 'platform'}:{ROOT / 'workers'}"
    env.update({k: str(v) for k, v in extra.items()})
    return env


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture(scope="session", autouse=True)
def _flush_survives_a_worker_deadlock():
    """A transactional test's teardown flush (TRUNCATE) can deadlock with a task the live
    Celery worker is still running on the test database (a pump or a cache warm sent on
    commit); PostgreSQL then aborts one side. Retry the flush: the worker's transaction
    ends within moments, and its own abort is logged and harmless."""
    from django.core.management.base import CommandError
    from django.core.management.commands import flush

    original = flush.Command.handle

    def handle(self, **options):
        for attempt in range(5):
            try:
                return original(self, **options)
            except CommandError as exc:
                if "deadlock" not in str(exc.__cause__ or "") or attempt == 4:
                    raise
                time.sleep(0.5 * (attempt + 1))

    flush.Command.handle = handle
    yield
    flush.Command.handle = original


@pytest.fixture(scope="session")
def tiny_model_path() -> str:
    """The tiny random Llama, built once per model folder (seconds)."""
    from umbra.models.prepare import prepare

    return str(prepare("tiny"))


@pytest.fixture(scope="session")
def ray_cluster(tmp_path_factory):
    """A local Ray head of its own (``ray start --block``) with the Jobs API.

    Yields ``{"gcs": "127.0.0.1:PORT", "dashboard": "http://127.0.0.1:PORT"}``.
    """
    gcs, dash, *agents = free_ports(9)
    log = open(tmp_path_factory.mktemp("ray") / "ray.log", "w")
    # A temp dir of its own (short: Ray's socket paths stay under ~107 characters): job
    # drivers join the cluster named in <temp dir>/ray_current_cluster, which the shared
    # /tmp/ray would point at whichever head on this machine started last.
    temp = tempfile.mkdtemp(prefix="uray-", dir="/tmp")
    proc = subprocess.Popen(
        [str(VENV_BIN / "ray"), "start", "--head", "--block", f"--port={gcs}", f"--dashboard-port={dash}",
         f"--temp-dir={temp}",
         "--dashboard-host=127.0.0.1", "--num-cpus=8", "--disable-usage-stats", "--include-dashboard=true",
         # own ports for every agent so a running demo cluster does not collide
         *(f"--{name}-port={port}" for name, port in zip(
             ("ray-client-server", "dashboard-agent-listen", "dashboard-agent-grpc", "metrics-export",
              "runtime-env-agent", "node-manager", "object-manager"), agents))],
        env=_env(), stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_http(f"http://127.0.0.1:{dash}/api/version", 120, proc)
        yield {"gcs": f"127.0.0.1:{gcs}", "dashboard": f"http://127.0.0.1:{dash}"}
    finally:
        _stop(proc)
        shutil.rmtree(temp, ignore_errors=True)  # session logs and spilled objects: can be large


def _test_database_url() -> str:
    from django.conf import settings

    db = settings.DATABASES["default"]
    assert db["ENGINE"].endswith("postgresql"), "integration tests need PostgreSQL (DATABASE_URL)"
    user = db.get("USER") or "postgres"
    return f"postgres://{user}@{db.get('HOST') or '127.0.0.1'}:{db.get('PORT') or 5432}/{db['NAME']}"


@pytest.fixture(scope="session")
def live_web(django_db_setup, tmp_path_factory, checkpoint_root):
    """daphne serving the ASGI app (HTTP + WebSocket) on the test database and the workers'
    checkpoint folder (model downloads); yields its URL."""
    port = free_port()
    log = open(tmp_path_factory.mktemp("web") / "web.log", "w")
    proc = subprocess.Popen([str(VENV_BIN / "daphne"), "-b", "127.0.0.1", "-p", str(port),
                             "umbra_site.asgi:application"],
                            env=_env(DATABASE_URL=_test_database_url(), UMBRA_CHECKPOINT_DIR=checkpoint_root),
                            stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_http(f"{url}/accounts/login/", 60, proc)
        yield url
    finally:
        _stop(proc)


@pytest.fixture(scope="session")
def checkpoint_root(tmp_path_factory) -> Path:
    """The runs' checkpoint folder (UMBRA_CHECKPOINT_DIR) of the workers this session starts:
    a fresh one, since run ids start over with each test database and a run must not resume
    from a checkpoint an earlier session left under the same id."""
    return tmp_path_factory.mktemp("checkpoints")


@pytest.fixture(scope="session")
def live_worker(django_db_setup, live_web, ray_cluster, checkpoint_root, tmp_path_factory):
    """A real Celery worker on the test queue that submits to the test Ray head."""
    log_path = tmp_path_factory.mktemp("worker") / "worker.log"
    proc = subprocess.Popen(
        [str(VENV_BIN / "celery"), "-A", "umbra_site", "worker", "-Q", os.environ.get("UMBRA_CELERY_QUEUE", "umbra"),
         "-c", "2", "--loglevel=INFO"],
        env=_env(DATABASE_URL=_test_database_url(), RAY_ADDRESS=ray_cluster["dashboard"],
                 UMBRA_PLATFORM_URL=live_web, UMBRA_CHECKPOINT_DIR=checkpoint_root),
        stdout=open(log_path, "w"), stderr=subprocess.STDOUT)
    time.sleep(3)
    if proc.poll() is not None:
        raise RuntimeError(f"celery worker exited: {log_path.read_text()[-2000:]}")
    yield log_path
    _stop(proc)


@pytest.fixture
def team_user():
    """A member of team 'alpha' (password 'pw-alpha-123')."""
    from tests import factories

    team = factories.team("alpha")
    return team, factories.member(team, "alice", password="pw-alpha-123")


@pytest.fixture
def running_run(team_user):
    """A running run of team 'alpha' and its plaintext ingestion token."""
    from runs.ingest_tokens import issue_ingest_token
    from runs.models import Run
    from tests import factories

    team, user = team_user
    run = factories.run(factories.experiment(team, "live"), state=Run.State.RUNNING, created_by=user)
    return run, issue_ingest_token(run)


@pytest.fixture(autouse=True)
def _fresh_login_throttle():
    """The in-process login throttle would carry attempts from one test to the next."""
    from django.core.cache import caches

    caches["throttle"].clear()


@pytest.fixture
def yaml_file(tmp_path, monkeypatch):
    """Writes a submission file; the CLI is logged in nowhere, so any request would fail."""
    monkeypatch.setenv("UMBRA_CONFIG_DIR", str(tmp_path / "cfg"))
    monkeypatch.delenv("UMBRA_URL", raising=False)
    monkeypatch.delenv("UMBRA_TOKEN", raising=False)

    def write(config: dict) -> str:
        path = tmp_path / "run.yaml"
        path.write_text(yaml.safe_dump({"team": "alpha", "experiment": "bounds", **config}))
        return str(path)
    return write
