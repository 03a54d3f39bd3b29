"""Engine processes sleep while they wait for each other on CPU (umbra.rollout.engine_wait).

Two processes talk over two real vLLM shared-memory queues as an engine core and its worker
do: the core sends a step, the worker works and replies, then the core asks at once for the
step's drafts (a speculating engine's ``take_draft_token_ids``). vLLM's readers spin a core
all along; a reader that only sleeps on the notification lost the drafts' reply (dropped by
the notify socket) and stalled 5 s every step.
"""
import json
import multiprocessing as mp
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORK_S = 0.02


def _worker(cmd_handle, queue) -> None:
    from vllm.distributed.device_communicators.shm_broadcast import MessageQueue

    from umbra.rollout import engine_wait

    engine_wait.apply()
    cmd = MessageQueue.create_from_handle(cmd_handle, 0)
    reply = MessageQueue(1, 1)
    queue.put(reply.export_handle())
    cmd.wait_until_ready()
    reply.wait_until_ready()
    while (message := cmd.dequeue(indefinite=True)) != "stop":
        end = time.perf_counter() + message  # a step's compute (0: the drafts' reply)
        while time.perf_counter() < end:
            pass
        reply.enqueue("ok")


def _core(rounds: int) -> dict:
    """The engine core's side; returns its CPU seconds, wall seconds and slowest draft reply."""
    from vllm.distributed.device_communicators.shm_broadcast import MessageQueue

    from umbra.rollout import engine_wait

    engine_wait.apply()
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    cmd = MessageQueue(1, 1)
    worker = ctx.Process(target=_worker, args=(cmd.export_handle(), queue))
    worker.start()
    reply = MessageQueue.create_from_handle(queue.get(timeout=120), 0)
    cmd.wait_until_ready()
    reply.wait_until_ready()
    slowest = 0.0
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(rounds):
        cmd.enqueue(WORK_S)
        reply.dequeue(timeout=30)
        start = time.perf_counter()
        cmd.enqueue(0.0)
        reply.dequeue(timeout=30)
        slowest = max(slowest, time.perf_counter() - start)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    cmd.enqueue("stop")
    worker.join(timeout=30)
    return {"cpu_s": cpu, "wall_s": wall, "slowest_draft_reply_s": slowest}


def _run(code: str, env: dict) -> str:
    path = os.pathsep.join([ROOT, os.path.join(ROOT, "platform"), os.path.join(ROOT, "workers")])
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": path, **env},
                         capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.strip().splitlines()[-1]


def test_the_engine_core_sleeps_and_replies_that_follow_at_once_do_not_stall():
    code = ("import json; from tests.unit.test_engine_wait import _core; "
            "print(json.dumps(_core(25)))")
    result = json.loads(_run(f"if __name__ == '__main__':\n    {code}", {}))
    # vLLM's spin: cpu_s ~ wall_s; ours sleeps through the worker's 20 ms steps
    assert result["cpu_s"] < 0.5 * result["wall_s"], result
    # a dropped notification left to vLLM's 5 s re-check stalled every draft reply
    assert result["slowest_draft_reply_s"] < 1.0, result


def test_umbra_engine_spin_keeps_vllms_wait():
    code = ("from vllm.distributed.device_communicators.shm_broadcast import SpinCondition as S; "
            "w = S.wait; from umbra.rollout import engine_wait; engine_wait.apply(); print(S.wait is w)")
    assert _run(code, {"UMBRA_ENGINE_SPIN": "1"}) == "True"
    assert _run(code, {}) == "False"
