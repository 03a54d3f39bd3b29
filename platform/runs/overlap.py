"""Whether two runs shared a cluster at the same time (ours): runs whose rollouts overlapped
on one Ray cluster competed for it, so their throughput ratio says as much about the overlap
as about the rollout policy (the compare page flags such pairs; the run page's headline
avoids such a reference)."""
from __future__ import annotations

from datetime import datetime

from runs.ray_jobs import cluster_address


def busy_interval(run, now: datetime) -> tuple[datetime, datetime] | None:
    """When ``run`` held its cluster: from its dispatch (else its start) to its end (now
    while it runs); None for a run never dispatched."""
    start = run.dispatched_at or run.started_at
    if start is None:
        return None
    return start, run.finished_at or now


def ran_concurrently(a, b, now: datetime) -> bool:
    """``a`` and ``b`` were on the same cluster at overlapping times (touching ends do not overlap)."""
    ia, ib = busy_interval(a, now), busy_interval(b, now)
    return bool(ia and ib and cluster_address(a.config) == cluster_address(b.config)
                and ia[0] < ib[1] and ib[0] < ia[1])
