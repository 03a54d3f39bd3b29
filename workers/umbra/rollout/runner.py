"""Drive one rollout: a policy's plan executed on the instance actors."""
from __future__ import annotations

import time

from umbra.rollout.request import Request


def run_rollout(policy, instances: list, groups: list[list[Request]]) -> tuple[list[Request], float, float]:
    """Run every request of ``groups`` on ``instances`` as ``policy`` assigns them.

    Returns ``(finished requests in group order, start_s, end_s)``.
    Raises ``ray.exceptions.RayError`` when an instance fails.
    """
    import ray

    plan = policy.assign(groups, len(instances))
    start = time.time()
    futures = [inst.generate.remote(reqs) for inst, reqs in zip(instances, plan) if reqs]
    done = [r for batch in ray.get(futures) for r in batch]
    end = time.time()
    done.sort(key=lambda r: (r.group_id, r.index))
    return done, start, end
