"""A cache for per-run derived data (downsampled series, statistics), versioned by the
run's ``metrics_version``: each stored batch makes a new version, so nothing stale is
served and finished runs are computed once."""
from __future__ import annotations

import hashlib
import logging
from typing import Callable, Hashable, TypeVar

from django.core.cache import cache
from redis.exceptions import RedisError

from runs.models import Run

T = TypeVar("T")
log = logging.getLogger(__name__)
_ABSENT = "absent"  # cached marker: the run has no such data


def run_versions(run_ids: list[int]) -> dict[int, str]:
    """``{run_id: version}``: the run's creation time (unique even when a database is
    recreated and ids start over) and its ``metrics_version``, which every stored metric
    batch bumps (``telemetry.services.ingest``, the only writer of points)."""
    return {pk: f"{created.timestamp():.6f}-{version}" for pk, created, version in
            Run.objects.filter(pk__in=run_ids).values_list("pk", "created_at", "metrics_version")}


def cached_per_run(kind: str, run_ids: list[int], parts: list[Hashable],
                   compute: Callable[[list[int], list[Hashable]], dict[tuple[int, Hashable], T]],
                   versions: dict[int, str] | None = None) -> dict[tuple[int, Hashable], T]:
    """``{(run_id, part): value}`` for every pair that has data, from the cache where the
    run's version is cached, else from ``compute(runs, parts)`` (called once, for the runs
    and parts that missed) whose answers, and absences, are then cached. ``versions``:
    ``run_versions(run_ids)`` when the caller already has it. With the cache (Redis)
    unreachable everything is computed and nothing is cached; no error is raised."""
    versions = run_versions(run_ids) if versions is None else versions
    keys = {(r, p): f"{kind}:{r}:{versions[r]}:{hashlib.sha1(repr(p).encode()).hexdigest()}"
            for r in run_ids if r in versions for p in parts}
    try:
        found, cache_up = cache.get_many(list(keys.values())), True
    except RedisError as exc:
        # The cache only saves work: with Redis down, compute (dashboards back-fill through here).
        log.warning("series cache unavailable, computing: %s", exc)
        found, cache_up = {}, False
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
        try:
            if cache_up:
                cache.set_many({keys[pair]: fresh.get(pair, _ABSENT) for pair in missing})
        except RedisError as exc:
            log.warning("series cache unavailable, not stored: %s", exc)
        out.update({pair: fresh[pair] for pair in missing if pair in fresh})
    return out
