"""Benchmark policy names: the four policies plus one-flag Seer ablations."""
from __future__ import annotations

from dataclasses import dataclass

from umbra.rollout.policies import make_policy


@dataclass(frozen=True)
class Variant:
    """A named policy set-up: ``policy`` with ``options``; ``spec`` = grouped speculative decoding."""

    name: str
    policy: str
    options: dict
    spec: bool = False


def variant(name: str, chunk_tokens: int, kv_block_tokens: int = 1) -> Variant:
    """Resolve ``static-group | request-lb | oracle-lfs | seer | seer-no-spec |
    seer-no-context | seer-no-divided | seer-divided`` (divided rollout alone: FIFO, no
    speculation); seer variants align chunk ends to ``kv_block_tokens``.
    Raises ValueError for other names."""
    if name in ("static-group", "request-lb", "oracle-lfs"):
        return Variant(name, name, {})
    flags = {"seer": {}, "seer-no-spec": {"spec": False}, "seer-no-context": {"context_aware": False},
             "seer-no-divided": {"divided": False}, "seer-divided": {"context_aware": False, "spec": False}}
    if name not in flags:
        raise ValueError(f"unknown policy '{name}': use static-group, request-lb, oracle-lfs, seer, "
                         "seer-no-spec, seer-no-context, seer-no-divided or seer-divided")
    opts = {"chunk_tokens": chunk_tokens, "divided": True, "context_aware": True,
            "kv_block_tokens": kv_block_tokens, **flags[name]}
    spec = opts.pop("spec", True)
    return Variant(name, "seer", opts, spec)


def build(v: Variant, lengths: dict[str, int] | None):
    """The policy object of variant ``v`` (oracle-lfs gets the measured ``lengths``)."""
    if v.policy == "oracle-lfs":
        return make_policy("oracle-lfs", lengths=lengths or {})
    return make_policy(v.policy, **v.options)
