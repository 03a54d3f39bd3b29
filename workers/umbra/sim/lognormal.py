"""``--workload lognormal:KEY=VALUE,...``: a parametric workload of one's own shape (ours), so
one can ask how much a policy gains as lengths spread or as groups explain more of them."""
from __future__ import annotations

import math
import random
import re

from umbra.sim.step_model import StepModel
from umbra.sim.workload import Cluster, Workload, group_lengths

PREFIX = "lognormal:"
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", re.ASCII)
# key -> (type, default, low, high): as large as the presets (9,600 requests, 98,304 tokens),
# so a run at the limits takes minutes, as qwen2-vl-72b does, and its memory stays bounded
KEYS = {"requests": (int, 512, 1, 10_000), "max_tokens": (int, 768, 2, 131_072),
        "mean_tokens": (float, 278.0, 1.0, 1_000_000.0), "sigma": (float, 0.65, 0.0, 4.0),
        "group_share": (float, 0.3, 0.0, 1.0), "prompt_tokens": (int, 130, 1, 1_000_000)}
# the cluster unless overridden: two instances as `umbra bench rollout` runs them on this machine
INSTANCES, MAX_BATCH, KV_CAPACITY = 2, 256, 32


def parse(spec: str) -> dict:
    """The parameters of ``lognormal:k=v,...`` (omitted keys take their defaults).
    Raises ValueError naming a bad key or value."""
    body = spec[len(PREFIX):]
    params = {k: d for k, (_, d, _, _) in KEYS.items()}
    given: set[str] = set()
    for item in filter(None, (p.strip() for p in body.split(","))):
        key, eq, raw = item.partition("=")
        key, raw = key.strip(), raw.strip()
        if not eq or key not in KEYS:
            raise ValueError(f"lognormal workload: '{item[:40]}' is not KEY=VALUE with KEY one of {', '.join(KEYS)}")
        if key in given:
            raise ValueError(f"lognormal workload: {key} is given twice")
        given.add(key)
        kind, _, lo, hi = KEYS[key]
        try:
            if not _NUMBER.fullmatch(raw):  # ASCII digits only (int() and float() take others too)
                raise ValueError
            value = kind(raw)
        except ValueError:
            raise ValueError(f"lognormal workload: {key} must be {'an integer' if kind is int else 'a number'}") from None
        if not (math.isfinite(value) and lo <= value <= hi):
            raise ValueError(f"lognormal workload: {key} must be within [{lo}, {hi}]")
        params[key] = value
    if not params["mean_tokens"] < params["max_tokens"]:
        raise ValueError("lognormal workload: mean_tokens must be below max_tokens")
    return params


def workload(spec: str, group_size: int, seed: int, step: StepModel) -> Workload:
    """Output lengths ``log L = mu + a*z_group + b*z_request`` capped at ``max_tokens``, with
    ``a^2 / sigma^2 = group_share`` (the share of log-length variance a group explains) and
    ``mu`` solved for ``mean_tokens`` (:func:`~umbra.sim.workload.group_lengths`); prompts
    lognormal around ``prompt_tokens`` (sigma 0.2), one per group; on two instances of
    ``max_batch`` 256 and 32 worst-case contexts of KV each. Raises ValueError on a bad spec."""
    p = parse(spec)
    if group_size < 1 or p["requests"] % group_size:
        raise ValueError(f"group size {group_size} must divide the workload's {p['requests']} requests")
    rng = random.Random(seed)
    outs = group_lengths(p["requests"] // group_size, group_size, p["max_tokens"], p["mean_tokens"], rng,
                         sigma=max(p["sigma"], 1e-9), group_share=p["group_share"])
    prompts = [max(1, round(rng.lognormvariate(math.log(p["prompt_tokens"]), 0.2))) for _ in outs]
    got = sum(map(sum, outs)) / p["requests"]
    if abs(got - p["mean_tokens"]) > max(1.0, 0.02 * p["mean_tokens"]):
        raise ValueError(f"lognormal workload: mean_tokens {p['mean_tokens']:g} is not reachable with sigma "
                         f"{p['sigma']:g} and max_tokens {p['max_tokens']} (the lengths' mean is {got:.1f})")
    groups = [[(prompt, o) for o in g] for prompt, g in zip(prompts, outs)]
    max_len = max(prompts) + p["max_tokens"]
    return Workload(spec, groups, p["max_tokens"], Cluster(INSTANCES, KV_CAPACITY * max_len, MAX_BATCH, step),
                    {"lognormal": p, "group_size": group_size, "seed": seed})
