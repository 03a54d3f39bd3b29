"""What one process of the Ray job reads about itself and its node with ``psutil`` (ours):
called inside each trainer rank and rollout instance actor (their ``system_sample``
method) and by the driver for its own process; ``umbra.telemetry.system`` turns the
answers into ``system/*`` metrics.

- the process (``process_sample``): CPU (percent of one core, summed over the process and,
  with ``children``, every process it started, such as a vLLM engine's core process), their
  resident memory summed (pages they share count once per process), how many processes
  that was, and their GPU memory where NVML (``pynvml``) or an initialised ``torch.cuda``
  is there;
- its node (``node_sample``): CPU (percent of all cores), memory used / total (used = total -
  available) and, with ``pynvml`` only, GPU utilisation (mean over the node's GPUs) and GPU
  memory used / total (summed).

CPU percentages cover the time since the previous sample in the same process; a process's
first sample reads 0. Never raises: what cannot be read is left out.
"""
from __future__ import annotations

import logging
import re
import socket
import sys

import psutil

log = logging.getLogger(__name__)
GIB = 1024 ** 3
_NVML = None  # pynvml once initialised; False when it is absent or has no driver


def metric_key(text: str) -> str:
    """``text`` as the key part of a metric name (``system/node/<key>/...``): lower case,
    letters, digits and ``_ . -`` only (anything else becomes ``-``), at most 63 characters."""
    key = re.sub(r"[^a-z0-9_.-]+", "-", str(text).lower()).strip("-.")[:63]
    return key or "unknown"


def host_key() -> str:
    """This node's key: its host name as a metric key."""
    return metric_key(socket.gethostname())


def _nvml():
    global _NVML
    if _NVML is None:
        try:
            import pynvml

            pynvml.nvmlInit()
            _NVML = pynvml
        except Exception as exc:  # noqa: BLE001 - no pynvml or no NVIDIA driver: no GPU numbers
            log.debug("no NVML: %s", exc)
            _NVML = False
    return _NVML or None


def _gpu_handles(nv) -> list:
    return [nv.nvmlDeviceGetHandleByIndex(i) for i in range(nv.nvmlDeviceGetCount())]


def gpu_node_sample() -> dict[str, float]:
    """GPU utilisation and memory of every GPU of this node (NVML); {} without ``pynvml`` or GPUs."""
    nv = _nvml()
    if nv is None:
        return {}
    try:
        handles = _gpu_handles(nv)
        if not handles:
            return {}
        util = [float(nv.nvmlDeviceGetUtilizationRates(h).gpu) for h in handles]
        mem = [nv.nvmlDeviceGetMemoryInfo(h) for h in handles]
        return {"gpu_util_percent": sum(util) / len(util), "gpu_mem_used_gib": sum(m.used for m in mem) / GIB,
                "gpu_mem_total_gib": sum(m.total for m in mem) / GIB}
    except Exception as exc:  # noqa: BLE001 - monitoring only
        log.debug("NVML node sample failed: %s", exc)
        return {}


def gpu_process_gib(pids: set[int]) -> float | None:
    """GPU memory held by the processes ``pids``: NVML's per-process figure, else (no NVML, or
    NVML sees none of them, as in another PID namespace) what this process's ``torch.cuda``
    reserved, if it initialised CUDA; None when neither says."""
    nv = _nvml()
    if nv is not None:
        try:
            used = [p.usedGpuMemory for h in _gpu_handles(nv) for p in nv.nvmlDeviceGetComputeRunningProcesses(h)
                    if p.pid in pids and p.usedGpuMemory]
            if used:
                return sum(used) / GIB
        except Exception as exc:  # noqa: BLE001
            log.debug("NVML process sample failed: %s", exc)
    torch = sys.modules.get("torch")  # never imported here: only a process that uses torch has CUDA memory
    try:
        if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
            return sum(torch.cuda.memory_reserved(i) for i in range(torch.cuda.device_count())) / GIB
    except Exception as exc:  # noqa: BLE001
        log.debug("torch.cuda sample failed: %s", exc)
    return None


def node_sample() -> dict[str, float]:
    """This node's CPU (percent of all cores since the previous call in this process), memory
    and, with NVML, GPUs."""
    try:
        mem = psutil.virtual_memory()
        used = mem.total - mem.available
        out = {"cpu_percent": float(psutil.cpu_percent(interval=None)), "mem_used_gib": used / GIB,
               "mem_total_gib": mem.total / GIB, "mem_frac": used / mem.total}
    except Exception as exc:  # noqa: BLE001
        log.debug("node sample failed: %s", exc)
        out = {}
    return {**out, **gpu_node_sample()}


class ProcessProbe:
    """Samples the process ``pid`` (this one by default) and, with ``children``, every process
    it started; keeps each ``psutil.Process`` so its CPU is measured since the previous sample."""

    def __init__(self, pid: int | None = None, children: bool = True):
        self._root = psutil.Process(pid)
        self._children = children
        self._procs: dict[tuple[int, float], psutil.Process] = {}
        self.process_sample()  # the first CPU reading of each process only starts its measurement
        psutil.cpu_percent(interval=None)

    def _processes(self) -> list[psutil.Process]:
        procs = [self._root]
        if self._children:
            try:
                procs += self._root.children(recursive=True)
            except psutil.Error:
                pass
        return procs

    def process_sample(self) -> dict[str, float]:
        """``cpu_percent``, ``rss_gib``, ``processes`` and (on a GPU) ``gpu_mem_gib`` of the
        process and its children; {} once the process itself is gone."""
        cpu = rss = 0.0
        seen: dict[tuple[int, float], psutil.Process] = {}
        for proc in self._processes():
            try:
                key = (proc.pid, proc.create_time())
                proc = self._procs.get(key, proc)
                cpu += proc.cpu_percent(interval=None)
                rss += proc.memory_info().rss
                seen[key] = proc
            except psutil.Error:  # it ended meanwhile
                if proc.pid == self._root.pid:
                    return {}
        self._procs = seen
        out = {"cpu_percent": cpu, "rss_gib": rss / GIB, "processes": float(len(seen))}
        gpu = gpu_process_gib({pid for pid, _ in seen})
        if gpu is not None:
            out["gpu_mem_gib"] = gpu
        return out

    def sample(self) -> dict:
        """``{"host": host_key(), "pid", "process": process_sample(), "node": node_sample()}``."""
        return {"host": host_key(), "pid": self._root.pid, "process": self.process_sample(), "node": node_sample()}


_OWN: ProcessProbe | None = None


def own_sample() -> dict:
    """``ProcessProbe.sample`` of this process and its children (one probe per process, made
    on the first call: an actor calls it once when ready, so its first real sample covers
    the time since then)."""
    global _OWN
    if _OWN is None:
        _OWN = ProcessProbe()
    return _OWN.sample()
