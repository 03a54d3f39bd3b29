"""Rollout policies: which requests go to which instance.

Pure and deterministic given their inputs, so the same policy object can drive
real instances and (later) the simulator.
"""
from __future__ import annotations

from umbra.rollout.request import Request


class StaticGroupPolicy:
    """veRL-style baseline: groups pre-assigned round-robin to instances; each
    instance runs its groups to completion (no migration, no chunking)."""

    name = "static-group"

    def assign(self, groups: list[list[Request]], num_instances: int) -> list[list[Request]]:
        """Return, per instance, the requests it runs, group by group.

        Shapes: ``groups[g][i]`` -> result ``[instance][k]``.
        Raises ValueError when ``num_instances < 1``.
        """
        if num_instances < 1:
            raise ValueError("num_instances must be >= 1")
        plan: list[list[Request]] = [[] for _ in range(num_instances)]
        for g, group in enumerate(groups):
            plan[g % num_instances].extend(group)
        return plan


POLICIES = {StaticGroupPolicy.name: StaticGroupPolicy}


def make_policy(name: str):
    """Policy object for ``name``. Raises ValueError for an unknown name."""
    try:
        return POLICIES[name]()
    except KeyError:
        raise ValueError(f"unknown rollout policy '{name}': choose from {', '.join(POLICIES)}") from None
