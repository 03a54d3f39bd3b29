"""A cache for per-run derived data (downsampled series, statistics), versioned by the
run's newest stored point: new points make a new version, so nothing stale is served
and finished runs are computed once."""
from __future__ import annotations

import hashlib
from typing import Callable, Hashable, TypeVar

from django.core.cache import cache
from django.db import connection
from django.db.models import OuterRef, Subquery

from runs.models import Run
from telemetry.models import MetricPoint

T = TypeVar("T")
_ABSENT = "absent"  # cached marker: the run has no such data


_PG_NEWEST = """
SELECT p.run_id, p.id, p.wall_time FROM telemetry_metricpoint p
WHERE p.id IN (SELECT (SELECT max(m.id) FROM telemetry_metricpoint m WHERE m.run_id = r.id)
               FROM unnest(%(runs)s::bigint[]) AS r(id))
"""


def run_versions(run_ids: list[int]) -> dict[int, str]:
    """``{run_id: version}`` for runs with points: the newest point's id and time (the time
    keeps versions unique when a database is recreated and ids start over). On PostgreSQL
    ``max(id)`` per run is one probe of the (run, id) index whatever the table holds."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cur:
            cur.execute(_PG_NEWEST, {"runs": list(run_ids)})
            rows = cur.fetchall()
    else:
        newest = MetricPoint.objects.filter(run=OuterRef("pk")).order_by("-run", "-id")
        rows = Run.objects.filter(pk__in=run_ids).annotate(
            last_id=Subquery(newest.values("id")[:1]), last_at=Subquery(newest.values("wall_time")[:1])
        ).values_list("pk", "last_id", "last_at")
    return {pk: f"{last_id}-{last_at.timestamp():.6f}" for pk, last_id, last_at in rows if last_id is not None}


def cached_per_run(kind: str, run_ids: list[int], parts: list[Hashable],
                   compute: Callable[[list[int], list[Hashable]], dict[tuple[int, Hashable], T]],
                   versions: dict[int, str] | None = None) -> dict[tuple[int, Hashable], T]:
    """``{(run_id, part): value}`` for every pair that has data, from the cache where the
    run's version is cached, else from ``compute(runs, parts)`` (called once, for the runs
    and parts that missed) whose answers, and absences, are then cached. ``versions``:
    ``run_versions(run_ids)`` when the caller already has it."""
    versions = run_versions(run_ids) if versions is None else versions
    keys = {(r, p): f"{kind}:{r}:{versions[r]}:{hashlib.sha1(repr(p).encode()).hexdigest()}"
            for r in run_ids if r in versions for p in parts}
    found = cache.get_many(list(keys.values()))
    out: dict[tuple[int, Hashable], T] = {}
    missing = []
    for pair, key in keys.items():
        if key in found:
            if found[key] != _ABSENT:
                out[pair] = found[key]
        else:
            missing.append(pair)
    if missing:
        fresh = compute(sorted({r for r, _ in missing}), sorted({p for _, p in missing}, key=repr))
        cache.set_many({keys[pair]: fresh.get(pair, _ABSENT) for pair in missing})
        out.update({pair: fresh[pair] for pair in missing if pair in fresh})
    return out
