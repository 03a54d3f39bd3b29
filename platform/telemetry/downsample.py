"""Min/max bucket downsampling of one metric series (pure logic).

A series longer than ``max_points`` is cut into ``max_points // 2`` buckets of equal
step range; each bucket keeps its lowest and its highest point, so a spike is never
averaged away (the M4/min-max family of chart downsamplers). The PostgreSQL query in
``telemetry.series`` computes the same buckets in the database; this function is the
reference it is tested against and the path used on other databases.
"""
from __future__ import annotations

from typing import NamedTuple


class Point(NamedTuple):
    """One stored point: ``step`` (iteration), ``value``, ``wall`` (Unix seconds)."""

    step: int
    value: float
    wall: float


def bucket_of(step: int, first: int, last: int, buckets: int) -> int:
    """Bucket index in ``[0, buckets)`` of ``step`` for a series spanning ``first..last``."""
    return (step - first) * buckets // (last - first + 1)


def min_max_buckets(points: list[Point], max_points: int) -> list[Point]:
    """Downsample ``points`` (sorted by step, unique steps) to at most ``max_points``.

    Returns the points unchanged when they fit; otherwise, per bucket, the point of
    lowest value and the point of highest value (one point if they coincide), ordered
    by step. Ties pick the lower step for the minimum and the higher for the maximum.
    Raises ValueError if ``max_points`` < 2.
    """
    if max_points < 2:
        raise ValueError("max_points must be at least 2")
    if len(points) <= max_points:
        return list(points)
    buckets = max_points // 2
    first, last = points[0].step, points[-1].step
    lows: dict[int, Point] = {}
    highs: dict[int, Point] = {}
    for p in points:
        b = bucket_of(p.step, first, last, buckets)
        lo, hi = lows.get(b), highs.get(b)
        if lo is None or p.value < lo.value:
            lows[b] = p
        if hi is None or p.value >= hi.value:
            highs[b] = p
    kept = {p.step: p for p in (*lows.values(), *highs.values())}
    return [kept[s] for s in sorted(kept)]
