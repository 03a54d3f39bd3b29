"""Named policy set-ups: the policies plus one-flag Seer ablations. The one list of
policy names that the benchmark, the simulator, the what-if page and their defaults read."""
from __future__ import annotations

from dataclasses import dataclass

from umbra.rollout.policies import make_policy

# Seer ablations: which switch each name turns off (divided alone = FIFO chunks, no speculation).
SEER_VARIANTS = {"seer": {}, "seer-no-spec": {"spec": False}, "seer-no-context": {"context_aware": False},
                 "seer-no-divided": {"divided": False}, "seer-divided": {"context_aware": False, "spec": False}}
BASELINES = ("static-group", "request-lb", "oracle-lfs")
VARIANT_NAMES = ("static-group", "request-lb", "seer-divided", "seer-no-spec", "seer", "seer-no-context",
                 "seer-no-divided", "oracle-lfs")
# What bench, sim and the what-if page compare unless told otherwise.
DEFAULT_VARIANTS = ("static-group", "request-lb", "seer-no-spec", "seer", "oracle-lfs")
# Seer Table 4's rows: baseline, + divided rollout, + context-aware scheduling, + grouped SD.
ABLATION = (("static-group", "baseline (static-group)"), ("seer-divided", "+ divided rollout"),
            ("seer-no-spec", "+ context-aware scheduling"), ("seer", "+ grouped speculative decoding"))


@dataclass(frozen=True)
class Variant:
    """A named policy set-up: ``policy`` with ``options``; ``spec`` = grouped speculative decoding."""

    name: str
    policy: str
    options: dict
    spec: bool = False


def variant(name: str, chunk_tokens: int, kv_block_tokens: int = 1) -> Variant:
    """Resolve one of :data:`VARIANT_NAMES`; seer variants align chunk ends to
    ``kv_block_tokens``. Raises ValueError for other names."""
    if name in BASELINES:
        return Variant(name, name, {})
    if name not in SEER_VARIANTS:
        raise ValueError(f"unknown policy '{name}': use {', '.join(VARIANT_NAMES)}")
    opts = {"chunk_tokens": chunk_tokens, "divided": True, "context_aware": True,
            "kv_block_tokens": kv_block_tokens, **SEER_VARIANTS[name]}
    spec = opts.pop("spec", True)
    return Variant(name, "seer", opts, spec)


def build(v: Variant, lengths: dict[str, int] | None):
    """The policy object of variant ``v`` (oracle-lfs gets the measured ``lengths``)."""
    if v.policy == "oracle-lfs":
        return make_policy("oracle-lfs", lengths=lengths or {})
    return make_policy(v.policy, **v.options)


def add_ratios(results: dict) -> None:
    """Add ``throughput_vs_static`` and ``tail_vs_static`` (ratios to ``static-group``)
    to every row of ``results`` (policy name -> row) in place."""
    base = results.get("static-group")
    for r in results.values():
        if base:
            r["throughput_vs_static"] = r["throughput_tok_s"] / base["throughput_tok_s"]
            # a baseline without a tail (all requests end together) gives no meaningful ratio
            r["tail_vs_static"] = r["tail_time_s"] / base["tail_time_s"] if base["tail_time_s"] > 1e-3 else None
