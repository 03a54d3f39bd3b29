"""Engine processes that sleep while they wait, on CPU nodes (ours).

vLLM's shared-memory queues between the engine-core process and its worker spin
(``sched_yield`` in a loop) for a second after each read before they sleep on the queue's
zmq notification. The engine core reads its worker's reply to every step, so it spins for
the whole rollout: a core's worth of CPU per instance (138 s of CPU over a 139 s rollout,
measured from ``/proc``). On a GPU node that buys microseconds per step and the cores are
idle anyway; on a CPU node the worker's matrix products run on those very cores, so the
spin takes time from the decode it waits for.

Here a reader spins for ``BUSY_S`` after a read, then sleeps on the notification, for at
most ``CAP_MS`` at a time. The spin catches the replies that come at once (a speculating
engine's ``take_draft_token_ids`` right after each step), and the cap bounds what a lost
notification costs: the writer's notify socket holds one message (zmq high-water mark 1),
so a second notify within about a millisecond of the first is dropped, and vLLM's own
re-check comes only after 5 s (measured: every such reply stalled 5 s, so a speculating
rollout crawled). ``UMBRA_ENGINE_SPIN=1`` keeps vLLM's spin (``umbra bench``: measure both).
"""
from __future__ import annotations

import os

BUSY_S = 0.002  # spin this long after a read: a reply that follows at once
CAP_MS = 2      # then sleep at most this long between looks: a dropped notification's cost
_applied = False


def apply() -> None:
    """On CPU platforms, make every shared-memory queue reader of this process spin only
    ``BUSY_S`` after a read and then sleep, ``CAP_MS`` at a time. Patches the class, so queues
    built before the call (the executor's, made before the scheduler is imported) follow too.
    The busy window is set on each wait since vLLM sets it per queue when it builds one."""
    global _applied
    from vllm.platforms import current_platform

    if _applied or not current_platform.is_cpu() or os.environ.get("UMBRA_ENGINE_SPIN") == "1":
        return
    from vllm.distributed.device_communicators.shm_broadcast import SpinCondition

    spin_wait = SpinCondition.wait

    def wait(self, timeout_ms=None):
        self.busy_loop_s = BUSY_S
        return spin_wait(self, CAP_MS if timeout_ms is None else min(timeout_ms, CAP_MS))

    SpinCondition.wait = wait
    _applied = True
