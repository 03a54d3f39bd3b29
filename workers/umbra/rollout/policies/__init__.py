"""Rollout policies side by side; each decides which request (chunk) runs where next.

Policies are pure and deterministic given their inputs, so the same objects drive
real vLLM instances (``rollout.runner``) and the simulator.
"""
from __future__ import annotations

from umbra.rollout.policies.base import Dispatch, Policy
from umbra.rollout.policies.oracle_lfs import OracleLFSPolicy
from umbra.rollout.policies.request_lb import RequestLBPolicy
from umbra.rollout.policies.seer import SeerPolicy
from umbra.rollout.policies.seer_oracle import SeerOraclePolicy
from umbra.rollout.policies.static_group import StaticGroupPolicy, VerlPolicy

POLICIES = {p.name: p for p in (VerlPolicy, StaticGroupPolicy, RequestLBPolicy, SeerPolicy, OracleLFSPolicy,
                                  SeerOraclePolicy)}
POLICY_NAMES = tuple(POLICIES)


def make_policy(name: str, **options) -> Policy:
    """Policy object for ``name`` with its options (e.g. ``chunk_tokens`` for seer).

    Raises ValueError for an unknown name.
    """
    try:
        cls = POLICIES[name]
    except KeyError:
        raise ValueError(f"unknown rollout policy '{name}': choose from {', '.join(POLICIES)}") from None
    return cls(**options)


__all__ = ["Dispatch", "Policy", "POLICIES", "POLICY_NAMES", "make_policy", "StaticGroupPolicy", "VerlPolicy",
           "RequestLBPolicy", "SeerPolicy", "OracleLFSPolicy", "SeerOraclePolicy"]
