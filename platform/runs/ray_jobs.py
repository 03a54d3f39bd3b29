"""The platform's side of the Ray Jobs API: where the cluster is, submit, poll, stop."""
from __future__ import annotations

import json
import logging
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

from django.conf import settings

log = logging.getLogger(__name__)


class ClusterUnavailable(RuntimeError):
    """No Ray cluster answers at the configured address."""


_USERINFO = re.compile(r"(^|//|\s)[^\s/@]+@")
_SURROGATE = re.compile("[\ud800-\udfff]")


def redact(text: str) -> str:
    """``text`` with the ``user:password@`` part of every address in it replaced by ``***@``:
    messages about the cluster end up in run events that users read."""
    return _USERINFO.sub(r"\1***@", text)


def cluster_address(run_config: dict) -> str:
    """The run's ``cluster`` if set, else RAY_ADDRESS, else the local head's dashboard."""
    return run_config.get("cluster") or settings.RAY_ADDRESS or settings.LOCAL_RAY_DASHBOARD


def _client(address: str):
    from ray.job_submission import JobSubmissionClient

    return JobSubmissionClient(address)


def ensure_local_head(timeout_s: float = 90.0) -> None:
    """Start a local Ray head (with the Jobs API) unless one answers already.

    Raises ClusterUnavailable when it does not come up within ``timeout_s``.
    """
    try:
        _client(settings.LOCAL_RAY_DASHBOARD)
        return
    except Exception:  # ConnectionError and friends: nothing listens yet
        pass
    ray_bin = shutil.which("ray", path=str(Path(sys.executable).parent)) or "ray"
    port = settings.LOCAL_RAY_DASHBOARD.rsplit(":", 1)[-1]
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}")
    log.info("starting a local Ray head (dashboard port %s)", port)
    # Ray's default GCS port is 6379, Redis's: give the head its own.
    # A temp dir of its own (as scripts/demo.sh): job drivers join the cluster named in
    # <temp dir>/ray_current_cluster, which in the shared /tmp/ray is whichever head started last.
    # Free ports for its agents: Ray's fixed defaults (job agent 52365, client 10001) may be
    # another head's, and then its job agent does not start.
    agents = [f"--{flag}-port={_free_port()}" for flag in (
        "ray-client-server", "dashboard-agent-listen", "dashboard-agent-grpc", "metrics-export",
        "runtime-env-agent", "node-manager", "object-manager")]
    started = subprocess.run([ray_bin, "start", "--head", f"--port={settings.LOCAL_RAY_GCS_PORT}",
                              "--dashboard-host=127.0.0.1", f"--dashboard-port={port}", "--num-cpus=8",
                              f"--temp-dir=/tmp/uray-{settings.LOCAL_RAY_GCS_PORT}", "--disable-usage-stats",
                              *agents], env=env, check=False, capture_output=True, text=True)
    if started.returncode != 0:
        raise ClusterUnavailable(f"could not start a local Ray head: {started.stderr.strip()[-500:]}")
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        try:
            _client(settings.LOCAL_RAY_DASHBOARD)
            return
        except Exception:
            time.sleep(2)
    raise ClusterUnavailable(f"local Ray head did not start at {settings.LOCAL_RAY_DASHBOARD}")


def client_for(run_config: dict):
    """A JobSubmissionClient for the run's cluster, starting the local head if that is the target."""
    address = cluster_address(run_config)
    if address == settings.LOCAL_RAY_DASHBOARD and not run_config.get("cluster"):
        ensure_local_head()
    try:
        return _client(address)
    except Exception as exc:
        # `from None`: the chained error would print the unredacted address in tracebacks.
        raise ClusterUnavailable(redact(f"Ray cluster at {address} does not answer: {exc}")) from None


# Seconds the state API may take to list the cluster's nodes.
NODES_TIMEOUT_S = 10


def cluster_totals(run_config: dict) -> dict[str, float]:
    """The total resources (Ray's ``CPU``, ``GPU``, ``memory``, ...) of the alive nodes of
    the run's cluster, from the state API on its dashboard address (``/api/v0/nodes``, what
    ``ray list nodes`` reads): one HTTP request, and the GCS's current view of the nodes.

    Totals, not what is free: Ray reports free resources only through the autoscaler's
    status, seconds late, and a run just submitted takes a while (engines load) before
    its actors hold anything; the queue counts the runs it dispatched against the totals
    instead (``runs.queue``). Starts the local head if that is the target. Raises
    ClusterUnavailable when the cluster does not answer.
    """
    address = cluster_address(run_config)
    if address == settings.LOCAL_RAY_DASHBOARD and not run_config.get("cluster"):
        ensure_local_head()
    from ray.util.state import list_nodes

    try:
        nodes = list_nodes(address=address, filters=[("state", "=", "ALIVE")], detail=True,
                           timeout=NODES_TIMEOUT_S, raise_on_missing_output=False)
    except Exception as exc:  # noqa: BLE001 - connection refused, timeouts, an old dashboard
        raise ClusterUnavailable(redact(f"Ray cluster at {address} does not list its nodes: {exc}")) from None
    totals: dict[str, float] = {}
    for node in nodes:
        for name, amount in (node.resources_total or {}).items():
            totals[name] = totals.get(name, 0.0) + float(amount)
    return totals


def job_exists(client, submission_id: str) -> bool:
    """Whether the cluster knows a job ``submission_id`` (in any state)."""
    try:
        client.get_job_info(submission_id)
        return True
    except Exception:  # the client raises a bare RuntimeError for 404
        return False


def checkpoint_dir(run_id: int) -> str:
    """The run's checkpoint folder (every attempt of the run reads and writes it)."""
    return str(Path(settings.UMBRA_CHECKPOINT_DIR) / f"run-{run_id}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def submit(client, submission_id: str, run_id: int, config: dict, token: str, seq_start: int = 0) -> str:
    """Submit the run's job as ``submission_id``; returns it.

    Secrets travel in the job's environment, never in its entrypoint. A resumed run's job
    numbers its metric batches after ``seq_start``, the last one stored (``UMBRA_SEQ_START``).
    Raises RuntimeError if a job with that id exists (callers check ``job_exists``), and
    ClusterUnavailable when the Jobs API refuses the job for another reason (e.g. "No
    available agent to submit job": the head's job agent is down) or the connection fails:
    retrying may help (a job the head took before the connection dropped is found by
    ``job_exists`` on the retry, not submitted twice).
    """
    env = {
        "UMBRA_RUN_CONFIG": json.dumps(config),
        "UMBRA_RUN_ID": str(run_id),
        "UMBRA_PLATFORM_URL": settings.UMBRA_PLATFORM_URL,
        "UMBRA_INGEST_TOKEN": token,
        "UMBRA_MODEL_DIR": settings.UMBRA_MODEL_DIR,
        "UMBRA_CHECKPOINT_DIR": checkpoint_dir(run_id),
        "UMBRA_SEQ_START": str(seq_start),
    }
    import requests

    try:
        return client.submit_job(entrypoint="python -m umbra.job", submission_id=submission_id,
                                 runtime_env={"env_vars": env})
    except requests.RequestException as exc:  # the dashboard went away (restarting): try again
        raise ClusterUnavailable(f"the Ray cluster did not take the job: {redact(str(exc))[:300]}") from None
    except RuntimeError as exc:
        if "already exists" in str(exc):
            raise
        raise ClusterUnavailable(f"the Ray cluster refused the job: {redact(str(exc))[:300]}") from None


def storable(text: str) -> str:
    """``text`` as a PostgreSQL text column holds it: NUL written ``\\x00`` and a lone surrogate
    as U+FFFD (what a job prints is not ours: a reward that writes binary must not make every
    later store of the log fail, leaving the run unfollowed)."""
    return _SURROGATE.sub("\ufffd", text.replace("\x00", "\\x00"))


def logs_tail(client, submission_id: str, max_chars: int = 8000) -> str:
    """The last ``max_chars`` characters of the job's driver log ('' if unavailable), storable."""
    try:
        return storable(client.get_job_logs(submission_id)[-max_chars:])
    except Exception:
        return ""
