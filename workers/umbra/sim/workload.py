"""Simulator workloads: a recorded trace, or a parametric workload with group-correlated,
heavy-tailed output lengths; presets shaped like Seer's Table 3.
"""
from __future__ import annotations

import json
import math
import random
import re
from dataclasses import dataclass, field

from umbra.sim.request import SimRequest
from umbra.sim.hardware import ENGINES
from umbra.sim.step_model import StepModel


@dataclass(frozen=True)
class Cluster:
    """``instances`` rollout instances, each holding ``kv_tokens`` tokens of KV cache and
    running at most ``max_batch`` requests; ``step`` is their step-time model."""

    instances: int
    kv_tokens: int
    max_batch: int
    step: StepModel

    def concurrency_cap(self, max_len: int) -> int:
        """Requests per instance such that even all at ``max_len`` context fit the KV cache
        (the real instances' rule, so nothing is ever preempted). Raises ValueError when not
        even one request fits."""
        if self.kv_tokens < max_len:
            raise ValueError(f"no request fits the KV cache: {self.kv_tokens} tokens per instance, "
                             f"a request may hold {max_len}")
        return min(self.max_batch, self.kv_tokens // max_len)


@dataclass
class Workload:
    """One rollout iteration: ``groups[g][i] = (prompt_tokens, output_tokens)``, outputs
    capped at ``max_tokens``, run on ``cluster``."""

    name: str
    groups: list[list[tuple[int, int]]]
    max_tokens: int
    cluster: Cluster
    meta: dict = field(default_factory=dict)

    def requests(self) -> list[list[SimRequest]]:
        """Fresh token-free requests, one list per group."""
        return [[SimRequest(g, i, p, o, self.max_tokens) for i, (p, o) in enumerate(group)]
                for g, group in enumerate(self.groups)]

    @property
    def max_len(self) -> int:
        return max(p for g in self.groups for p, _ in g) + self.max_tokens


def with_cluster(w: Workload, instances: int | None = None, kv_tokens: int | None = None,
                 max_batch: int | None = None) -> Workload:
    """``w`` on its cluster with the given fields overridden (None keeps a field)."""
    c = w.cluster
    w.cluster = Cluster(instances or c.instances, kv_tokens or c.kv_tokens, max_batch or c.max_batch, c.step)
    return w


@dataclass(frozen=True)
class Preset:
    """A workload shape: Seer Table 3's instance count, requests per iteration, max and mean
    output tokens, our prompt length; the engine numbers (``kv_tokens``, ``max_batch``,
    ``step``) are derived from public hardware and model facts in :mod:`umbra.sim.hardware`."""

    instances: int
    requests: int
    max_tokens: int
    mean_tokens: int
    prompt_tokens: int
    kv_tokens: int
    max_batch: int
    step: StepModel


def _preset(name: str, instances: int, requests: int, max_tokens: int, mean_tokens: int, prompt_tokens: int) -> Preset:
    e = ENGINES[name]
    return Preset(instances, requests, max_tokens, mean_tokens, prompt_tokens, e.kv_tokens, e.max_batch, e.step)


PRESETS: dict[str, Preset] = {
    "moonlight": _preset("moonlight", 32, 3200, 65_536, 22_386, 1_024),
    "qwen2-vl-72b": _preset("qwen2-vl-72b", 16, 9600, 40_960, 7_615, 2_048),
    "kimi-k2": _preset("kimi-k2", 8, 6400, 98_304, 38_959, 1_024),
}


def group_lengths(n_groups: int, group_size: int, max_tokens: int, mean_tokens: float, rng: random.Random,
                  sigma: float = 1.0, group_share: float = 0.6) -> list[list[int]]:
    """Heavy-tailed output lengths correlated within groups: ``log L = mu + a*z_group + b*z_req``
    with ``a^2 + b^2 = sigma^2`` and ``a^2 / sigma^2 = group_share`` (the share of the log-length
    variance a group explains); ``mu`` is solved so the mean after capping at ``max_tokens``
    is ``mean_tokens``. Raises ValueError when that mean is not reachable."""
    if not 1 <= mean_tokens < max_tokens:
        raise ValueError(f"mean_tokens must be within [1, {max_tokens})")
    a, b = sigma * math.sqrt(group_share), sigma * math.sqrt(1 - group_share)
    z = [(rng.gauss(0, 1), [rng.gauss(0, 1) for _ in range(group_size)]) for _ in range(n_groups)]

    def lengths(mu: float) -> list[list[int]]:
        return [[max(1, min(max_tokens, round(math.exp(mu + a * zg + b * zr)))) for zr in zrs] for zg, zrs in z]

    lo, hi = -5.0, math.log(max_tokens) + 5 * sigma
    for _ in range(60):  # the capped mean grows with mu: bisection
        mid = (lo + hi) / 2
        got = sum(map(sum, lengths(mid))) / (n_groups * group_size)
        lo, hi = (mid, hi) if got < mean_tokens else (lo, mid)
    return lengths((lo + hi) / 2)


def preset_workload(name: str, group_size: int = 8, seed: int = 0, step: StepModel | None = None) -> Workload:
    """The parametric workload of preset ``name`` with groups of ``group_size``.
    Raises ValueError for an unknown preset or a group size that does not divide its requests."""
    if name not in PRESETS:
        raise ValueError(f"unknown workload preset '{name}': choose from {', '.join(PRESETS)}")
    p = PRESETS[name]
    if group_size < 1 or p.requests % group_size:
        raise ValueError(f"group size {group_size} must divide the preset's {p.requests} requests")
    rng = random.Random(seed)
    n_groups = p.requests // group_size
    outs = group_lengths(n_groups, group_size, p.max_tokens, p.mean_tokens, rng)
    groups = [[(max(16, round(rng.lognormvariate(math.log(p.prompt_tokens), 0.5))), o) for o in g] for g in outs]
    cluster = Cluster(p.instances, p.kv_tokens, p.max_batch, step or p.step)
    return Workload(name, groups, p.max_tokens, cluster, {"preset": name, "group_size": group_size, "seed": seed})


# Bounds of trace fields: beyond them a trace is refused (they also bound the simulation's memory).
TRACE_LIMITS = {"group": (0, 10_000_000), "index": (0, 10_000_000), "prompt_tokens": (1, 10_000_000),
                "output_tokens": (1, 10_000_000), "max_tokens": (0, 10_000_000), "instances": (0, 1024),
                "capacity": (0, 65_536)}
_POLICY_NAME = re.compile(r"[A-Za-z0-9._:+@-]{0,40}")


def trace_row(rec) -> dict:
    """One validated trace record (``instances``, ``capacity``, ``max_tokens`` 0 = not recorded).
    Raises ValueError naming the bad field."""
    if not isinstance(rec, dict):
        raise ValueError("a record is a JSON object")
    row = {}
    for key, (lo, hi) in TRACE_LIMITS.items():
        raw = rec.get(key)
        if raw is None and key not in ("group", "index", "output_tokens"):
            raw = 1 if key == "prompt_tokens" else 0
        if isinstance(raw, bool) or not isinstance(raw, int):
            raise ValueError(f"{key} must be an integer")
        if not lo <= raw <= hi:
            raise ValueError(f"{key} must be within [{lo}, {hi}]")
        row[key] = raw
    policy = rec.get("policy") or ""
    if not isinstance(policy, str) or not _POLICY_NAME.fullmatch(policy):
        raise ValueError("policy must be a name of at most 40 letters, digits or ._:+@-")
    row["policy"] = policy
    finish = rec.get("finish_s")  # measured (a bench trace): what `umbra sim --vs-trace` compares with
    if finish is not None and (isinstance(finish, bool) or not isinstance(finish, (int, float))
                               or not 0 <= finish <= 1e7):
        raise ValueError("finish_s must be a number of seconds within [0, 1e7]")
    row["finish_s"] = None if finish is None else float(finish)
    return row


def parse_trace(lines, source: str = "trace") -> list[dict]:
    """Trace records from JSONL ``lines`` (``umbra bench rollout --trace``, a run's trace
    download): one request per line with ``group``, ``index``, ``output_tokens`` and optionally
    ``prompt_tokens``, ``policy``, ``max_tokens``, ``instances``, ``capacity`` (integers within
    TRACE_LIMITS). Raises ValueError naming the first bad line, or when there is no record."""
    rows: list[dict] = []
    for n, line in enumerate(lines, 1):
        if isinstance(line, bytes):
            line = line.decode("utf-8", errors="replace")
        if not line.strip():
            continue
        try:
            rows.append(trace_row(json.loads(line)))
        except (ValueError, RecursionError) as exc:  # JSON errors are ValueErrors too
            raise ValueError(f"{source}:{n}: not a trace record ({str(exc)[:200]})") from None
    if not rows:
        raise ValueError(f"{source}: no trace records")
    return rows


def trace_policies(rows: list[dict]) -> list[str]:
    """Policies recorded in a trace, in order of appearance."""
    return list(dict.fromkeys(r["policy"] for r in rows))


def workload_from_rows(rows: list[dict], cluster: Cluster, policy: str | None = None,
                       max_tokens: int | None = None, name: str = "trace") -> Workload:
    """A recorded iteration as a workload: the records of ``policy`` (default the first one
    in the trace). ``max_tokens`` defaults to the trace's ``max_tokens`` or its longest output.
    Raises ValueError when the policy has no records or a (group, index) repeats."""
    chosen = policy if policy is not None else rows[0]["policy"]
    mine = [r for r in rows if r["policy"] == chosen]
    if not mine:
        raise ValueError(f"{name}: no records of policy '{chosen}' (has: {', '.join(trace_policies(rows))})")
    by_group: dict[int, dict[int, tuple[int, int]]] = {}
    for r in mine:
        slot = by_group.setdefault(r["group"], {})
        if r["index"] in slot:
            raise ValueError(f"{name}: request g{r['group']}-r{r['index']} appears twice (a trace of several "
                                 f"iterations: download one, e.g. trace.jsonl?iteration=0)")
        slot[r["index"]] = (r["prompt_tokens"], r["output_tokens"])
    groups = [[g[i] for i in sorted(g)] for _, g in sorted(by_group.items())]
    cap = max_tokens or max(r["max_tokens"] for r in mine) or max(o for g in groups for _, o in g)
    groups = [[(p, min(o, cap)) for p, o in g] for g in groups]
    return Workload(name, groups, cap, cluster, {"trace": name, "policy": chosen})
