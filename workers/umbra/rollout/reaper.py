"""Stops a rollout instance's engine processes when the instance's actor dies.

vLLM runs its engine core and workers in child processes; when Ray kills the actor
(job stopped, run cancelled, ``ray stop``) they are orphaned and keep gigabytes of
memory. A small watcher process, outside the actor, kills them once the actor is gone.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time


def watch_children() -> None:
    """Start a watcher for the current process's descendants (call after the engine is up)."""
    import psutil

    me = psutil.Process()
    kids = [{"pid": p.pid, "created": p.create_time()} for p in me.children(recursive=True)]
    if not kids:
        return
    spec = json.dumps({"pid": me.pid, "created": me.create_time(), "children": kids})
    subprocess.Popen([sys.executable, "-m", "umbra.rollout.reaper", spec], start_new_session=True,
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _same(pid: int, created: float):
    import psutil

    try:
        p = psutil.Process(pid)
        return p if abs(p.create_time() - created) < 1e-3 else None  # the pid was not reused
    except psutil.NoSuchProcess:
        return None


def main(spec: str, poll_s: float = 1.0) -> None:
    """Wait for the watched process to exit, then terminate (and if need be kill) its children."""
    import psutil

    cfg = json.loads(spec)
    while _same(cfg["pid"], cfg["created"]) is not None:
        time.sleep(poll_s)
    procs = [p for c in cfg["children"] if (p := _same(c["pid"], c["created"])) is not None]
    for p in procs:
        p.terminate()
    _, alive = psutil.wait_procs(procs, timeout=5)
    for p in alive:
        p.kill()


if __name__ == "__main__":
    main(sys.argv[1])
