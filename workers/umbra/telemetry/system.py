"""CPU and memory of the Ray job while it runs (ours), sampled with ``psutil`` by the
driver once per iteration and sent with that iteration's metric batch:

- the node the driver runs on: ``system/node_cpu_percent``, ``system/node_mem_used_gib``,
  ``system/node_mem_total_gib``, ``system/node_mem_frac`` (used / total);
- the driver process: ``system/driver_rss_gib``;
- each live actor of this job on that node (Ray's state API lists them with their pid):
  ``system/actor_rss_gib/{i}`` and ``system/actor_cpu_percent/{i}``, ``i`` in the order of
  the actor ids, named in a note (``system: actor 0 = RolloutInstance (pid 123), ...``) when
  the set changes.

Never raises: a sample that fails (no state API, a process gone) is left out, since the run
must not fail over its own monitoring. ``MEMORY_WARN_FRAC`` of the node's memory used makes
a note, once per crossing.
"""
from __future__ import annotations

import logging

import psutil

log = logging.getLogger("umbra.job")
GIB = 1024 ** 3
MEMORY_WARN_FRAC = 0.9


def node_sample() -> dict[str, float]:
    """The node's CPU (percent of all cores since the last call) and memory."""
    mem = psutil.virtual_memory()
    return {"system/node_cpu_percent": float(psutil.cpu_percent(interval=None)),
            "system/node_mem_used_gib": (mem.total - mem.available) / GIB,
            "system/node_mem_total_gib": mem.total / GIB,
            "system/node_mem_frac": (mem.total - mem.available) / mem.total}


def _job_actors() -> list[tuple[str, str, int]]:
    """``(actor id, class name, pid)`` of this job's live actors on the driver's node ([] without Ray's state API)."""
    try:
        import ray
        from ray.util.state import list_actors

        ctx = ray.get_runtime_context()
        actors = list_actors(filters=[("job_id", "=", ctx.get_job_id()), ("state", "=", "ALIVE")],
                             limit=1000, raise_on_missing_output=False, timeout=5)
        node = ctx.get_node_id()
        return sorted((a.actor_id, a.class_name, int(a.pid)) for a in actors if a.node_id == node and a.pid)
    except Exception as exc:  # noqa: BLE001 - monitoring only
        log.debug("no actor list: %s", exc)
        return []


class SystemSampler:
    """Samples once per iteration (``sample``); remembers the actor processes, so each
    actor's CPU is measured over the time since the previous sample."""

    def __init__(self, list_actors=_job_actors):
        self._list_actors = list_actors
        self._procs: dict[str, psutil.Process] = {}
        self._named: list[str] = []
        self._warned = False
        psutil.cpu_percent(interval=None)  # the first call only starts the measurement

    def sample(self) -> tuple[dict[str, float], list[str]]:
        """``(metrics, notes)`` for this iteration's batch."""
        metrics: dict[str, float] = {}
        notes: list[str] = []
        try:
            metrics.update(node_sample())
            metrics["system/driver_rss_gib"] = psutil.Process().memory_info().rss / GIB
        except Exception as exc:  # noqa: BLE001
            log.debug("node sample failed: %s", exc)
        actors = self._list_actors()
        names = [f"actor {i} = {cls} (pid {pid})" for i, (_, cls, pid) in enumerate(actors)]
        if names and names != self._named:
            notes.append("system: " + ", ".join(names))
        self._named = names
        for i, (actor_id, _, pid) in enumerate(actors):
            try:
                proc = self._procs.get(actor_id)
                if proc is None or proc.pid != pid:
                    proc = self._procs[actor_id] = psutil.Process(pid)
                    proc.cpu_percent(interval=None)
                metrics[f"system/actor_rss_gib/{i}"] = proc.memory_info().rss / GIB
                metrics[f"system/actor_cpu_percent/{i}"] = float(proc.cpu_percent(interval=None))
            except Exception as exc:  # noqa: BLE001 - the actor ended between list and sample
                log.debug("actor %s: %s", actor_id, exc)
        frac = metrics.get("system/node_mem_frac")
        if frac is not None:
            if frac >= MEMORY_WARN_FRAC and not self._warned:
                notes.append(f"system: the node is near its memory limit: {metrics['system/node_mem_used_gib']:.1f} "
                             f"of {metrics['system/node_mem_total_gib']:.1f} GiB used ({frac:.0%})")
            self._warned = frac >= MEMORY_WARN_FRAC
        return metrics, notes
