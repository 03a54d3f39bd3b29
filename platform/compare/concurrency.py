"""Which compared runs shared a cluster at the same time (ours): two runs whose rollouts
overlapped on one Ray cluster competed for it, so their throughput ratio says as much
about the overlap as about the rollout policy."""
from __future__ import annotations

from datetime import datetime
from itertools import combinations

from runs.ray_jobs import cluster_address


def busy_interval(run, now: datetime) -> tuple[datetime, datetime] | None:
    """When ``run`` held its cluster: from its dispatch (else its start) to its end (now
    while it runs); None for a run never dispatched."""
    start = run.dispatched_at or run.started_at
    if start is None:
        return None
    return start, run.finished_at or now


def concurrent_pairs(runs, now: datetime) -> list[list[int]]:
    """``[[a, b], ...]`` (ids in the given order): the pairs of ``runs`` that were on the same
    cluster at overlapping times (touching ends do not overlap)."""
    spans = {r.pk: (cluster_address(r.config), busy_interval(r, now)) for r in runs}
    out = []
    for a, b in combinations(runs, 2):
        (ca, ia), (cb, ib) = spans[a.pk], spans[b.pk]
        if ia and ib and ca == cb and ia[0] < ib[1] and ib[0] < ia[1]:
            out.append([a.pk, b.pk])
    return out
