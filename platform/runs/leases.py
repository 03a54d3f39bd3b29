"""Short leases in the shared cache (Redis): one holder per key at a time, lost when
the holder stops renewing it, e.g. because its Celery worker was killed."""
from __future__ import annotations

from django.core.cache import cache


def hold(key: str, owner: str, ttl_s: float) -> bool:
    """Take the lease ``key`` for ``owner``, or renew it if ``owner`` holds it already,
    for ``ttl_s`` seconds (rounded down to whole seconds, at least 1).

    Returns False when another owner holds it. Renewal is a read then a touch, not one
    atomic step: if the lease expires in between, two owners may both hold it until
    the next renewal, where the one whose name is no longer stored gets False.
    """
    ttl = max(1, int(ttl_s))
    if cache.add(key, owner, timeout=ttl):
        return True
    if cache.get(key) == owner:
        cache.touch(key, timeout=ttl)
        return True
    return False


def release(key: str, owner: str) -> None:
    """Drop the lease ``key`` if ``owner`` holds it (another owner's lease is kept)."""
    if cache.get(key) == owner:
        cache.delete(key)
