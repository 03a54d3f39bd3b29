"""A killed rollout instance leaves no vLLM engine process behind (they hold GBs)."""
import os
import signal
import time

import psutil
import pytest

pytestmark = pytest.mark.integration


def test_engine_processes_die_with_their_actor(ray_driver, tiny_model_path):
    from umbra.rollout.instance import start_instances

    (inst,) = start_instances(1, tiny_model_path, 256, 8, seed=0, kv_cache_gib=1)
    actor_pid = ray_driver.get(inst.ready.remote())["pid"]
    pids = ray_driver.get(inst.engine_pids.remote())
    assert pids and all(psutil.pid_exists(p) for p in pids)
    os.kill(actor_pid, signal.SIGKILL)  # as `ray stop --force` does: no chance to shut down
    deadline = time.time() + 20
    while time.time() < deadline and any(psutil.pid_exists(p) for p in pids):
        time.sleep(0.5)
    alive = [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
    assert alive == []
