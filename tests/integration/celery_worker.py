"""A Celery worker process that a test starts and may SIGKILL, as when its machine dies.

Used by the tests that kill the worker dispatching or following a run (test_worker_faults,
test_two_nodes); each runs its workers on a queue of its own, so the session's worker never
takes their tasks."""
from __future__ import annotations

import os
import signal
import subprocess

from ..conftest import VENV_BIN, _env, _test_database_url


class Worker:
    """A Celery worker process on ``queue``, in a session of its own so one signal kills
    the main process and every pool child."""

    def __init__(self, log_path, queue: str, ray_address: str, platform_url: str, checkpoints):
        self.log_path = log_path
        self.proc = subprocess.Popen(
            [str(VENV_BIN / "celery"), "-A", "umbra_site", "worker", "-Q", queue, "-c", "2", "--loglevel=INFO",
             "-n", f"{queue}-{log_path.stem}@%h"],
            env=_env(DATABASE_URL=_test_database_url(), RAY_ADDRESS=ray_address, UMBRA_PLATFORM_URL=platform_url,
                     UMBRA_CELERY_QUEUE=queue, UMBRA_CHECKPOINT_DIR=checkpoints),
            stdout=open(log_path, "w"), stderr=subprocess.STDOUT, start_new_session=True)

    def kill(self) -> None:
        """SIGKILL the worker's whole process group and reap it."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(timeout=30)

    def log(self) -> str:
        return self.log_path.read_text()[-3000:]
