"""CPU, memory and GPU of the Ray job while it runs (ours), sampled once per iteration and
sent with that iteration's metric batch. Each trainer rank and rollout instance actor reads
its own process, the processes it started (a vLLM engine's core process) and its node with
``psutil`` (``umbra.telemetry.probe``, the actors' ``system_sample`` method); the driver asks
the actors it holds (``ask_actors``: one call each, all awaited together for at most
``ACTOR_TIMEOUT_S``, so a dead or stuck actor is left out instead of holding the loop),
reads its own process and node, and names the answers:

- per Ray node the run uses (the driver's and each actor's, by host name):
  ``system/node/<host>/cpu_percent``, ``.../mem_used_gib``, ``.../mem_total_gib``,
  ``.../mem_frac`` (used / total) and, with ``pynvml``, ``.../gpu_util_percent``,
  ``.../gpu_mem_used_gib``, ``.../gpu_mem_total_gib``;
- per actor (``trainer-<rank>``, ``rollout-<instance>``): ``system/actor/<actor>/cpu_percent``,
  ``.../rss_gib`` and, on GPUs, ``.../gpu_mem_gib``;
- the driver process: ``system/driver_rss_gib``.

A note names each actor's host and pid when it first answers or they change (a replaced
instance), and one says so when a node reaches ``MEMORY_WARN_FRAC`` of its memory (once per crossing, per node).
Never raises: the run must not fail over its own monitoring.
"""
from __future__ import annotations

import logging
import math
from typing import Callable

from umbra.telemetry.probe import ProcessProbe, metric_key

log = logging.getLogger("umbra.job")
MEMORY_WARN_FRAC = 0.9
ACTOR_TIMEOUT_S = 2.0
NODE_QUANTITIES = ("cpu_percent", "mem_used_gib", "mem_total_gib", "mem_frac", "gpu_util_percent",
                   "gpu_mem_used_gib", "gpu_mem_total_gib")
ACTOR_QUANTITIES = ("cpu_percent", "rss_gib", "gpu_mem_gib")


def ask_actors(actors: list[tuple[str, object]], timeout_s: float = ACTOR_TIMEOUT_S) -> dict[str, dict]:
    """``{key: answer}`` of each ``(key, actor handle)`` whose ``system_sample()`` answered
    within ``timeout_s`` (all asked at once); a dead, gone or slow actor is left out."""
    import ray

    refs = {}
    for key, actor in actors:
        try:
            refs[actor.system_sample.remote()] = key
        except Exception as exc:  # noqa: BLE001 - a handle of a killed actor
            log.debug("system sample of %s not asked: %s", key, exc)
    if not refs:
        return {}
    ready, _ = ray.wait(list(refs), num_returns=len(refs), timeout=timeout_s)
    out = {}
    for ref in ready:
        try:
            out[refs[ref]] = ray.get(ref)
        except Exception as exc:  # noqa: BLE001 - the actor died
            log.debug("system sample of %s failed: %s", refs[ref], exc)
    return out


def _numbers(part, names: tuple[str, ...]) -> dict[str, float]:
    """The finite numbers among ``names`` in an answer's part (anything else left out)."""
    part = part if isinstance(part, dict) else {}
    return {k: float(part[k]) for k in names
            if isinstance(part.get(k), (int, float)) and not isinstance(part[k], bool) and math.isfinite(part[k])}


def _lines(prefix: str, parts: list[str], limit: int = 1000) -> list[str]:
    """``prefix`` + ``parts`` joined by commas, in as many notes as keep each within ``limit``
    characters (the batch cuts a longer note)."""
    notes: list[str] = []
    for part in parts:
        if notes and len(notes[-1]) + 2 + len(part) <= limit:
            notes[-1] += ", " + part
        else:
            notes.append(prefix + part)
    return notes


class SystemSampler:
    """``sample()`` once per iteration; ``ask()`` returns the actors' answers by actor name
    (``ask_actors`` bound to the run's actors; none by default)."""

    def __init__(self, ask: Callable[[], dict[str, dict]] = dict):
        self._ask = ask
        self._driver = ProcessProbe(children=False)  # a local Ray cluster would be the driver's children
        self._placed: dict[str, tuple] = {}  # actor -> (host, pid) last named
        self._near: set[str] = set()

    def sample(self) -> tuple[dict[str, float], list[str]]:
        """``(metrics, notes)`` for this iteration's batch."""
        metrics: dict[str, float] = {}
        notes: list[str] = []
        own = self._driver.sample()
        if "rss_gib" in own["process"]:
            metrics["system/driver_rss_gib"] = own["process"]["rss_gib"]
        nodes = {own["host"]: _numbers(own["node"], NODE_QUANTITIES)}
        try:
            answers = self._ask()
        except Exception as exc:  # noqa: BLE001
            log.debug("no actor samples: %s", exc)
            answers = {}
        placed, texts = [], []
        for actor, answer in sorted(answers.items()):
            if not isinstance(answer, dict):
                continue
            key, host = metric_key(actor), metric_key(answer.get("host", ""))
            process = _numbers(answer.get("process"), ACTOR_QUANTITIES + ("processes",))
            for q in ACTOR_QUANTITIES:
                if q in process:
                    metrics[f"system/actor/{key}/{q}"] = process[q]
            if host not in nodes:
                nodes[host] = _numbers(answer.get("node"), NODE_QUANTITIES)
            started = int(process.get("processes", 1)) - 1
            placed.append((key, host, answer.get("pid")))
            texts.append(f"{key} on {host} (pid {answer.get('pid')}"
                         + (f", {started} child process{'es' if started != 1 else ''})" if started else ")"))
        new = [text for (key, *where), text in zip(placed, texts) if self._placed.get(key) != tuple(where)]
        notes += _lines("system: ", new)  # an actor's first answer, or a replaced instance
        self._placed.update((key, tuple(where)) for key, *where in placed)
        for host, node in sorted(nodes.items()):
            for q, value in node.items():
                metrics[f"system/node/{host}/{q}"] = value
            notes += self._memory_note(host, node)
        return metrics, notes

    def _memory_note(self, host: str, node: dict[str, float]) -> list[str]:
        """The note when ``host`` crosses MEMORY_WARN_FRAC of its memory (once until it drops below)."""
        frac = node.get("mem_frac")
        if frac is None:
            return []
        near = frac >= MEMORY_WARN_FRAC
        was = host in self._near
        (self._near.add if near else self._near.discard)(host)
        if not near or was:
            return []
        return [f"system: node {host} is near its memory limit: {node.get('mem_used_gib', 0.0):.1f} of "
                f"{node.get('mem_total_gib', 0.0):.1f} GiB used ({frac:.0%})"]
