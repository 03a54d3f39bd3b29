"""A run's rollout instances by index, kept at full strength: an instance that dies is
replaced (the rollout itself re-dispatches its chunks, see ``umbra.rollout.runner``)."""
from __future__ import annotations

import logging
from typing import Callable

log = logging.getLogger(__name__)


class InstancePool:
    """``handles[i]`` is instance ``i``'s actor; ``start(n, first_id)`` starts actors
    (``umbra.rollout.instance.start_instances`` with the run's settings bound), used for
    replacements; without it a lost instance cannot be replaced."""

    def __init__(self, handles: list, start: Callable[[int, int], list] | None = None):
        self.handles, self.start = list(handles), start

    @classmethod
    def started(cls, n: int, start: Callable[[int, int], list]) -> "InstancePool":
        """A pool of ``n`` instances started by ``start``."""
        return cls(start(n, 0), start)

    def replace(self, i: int, why: str) -> str:
        """Kill instance ``i`` (if still there) and start a replacement with the same id;
        returns the note for the run's event log. The caller loads weights into it.

        Raises ``ray.exceptions.RayActorError`` when the replacement cannot start, and
        RuntimeError for a pool that cannot start instances.
        """
        import ray

        if self.start is None:
            raise RuntimeError(f"rollout instance {i} {why}, and this pool cannot start a replacement")

        try:
            ray.kill(self.handles[i], no_restart=True)
        except Exception:  # noqa: BLE001 - already gone
            pass
        self.handles[i] = self.start(1, i)[0]
        log.warning("rollout instance %d %s; started a replacement", i, why)
        return f"rollout instance {i} {why}; a replacement instance was started"

    def dead(self, timeout_s: float = 60.0) -> list[int]:
        """Indices of instances that do not answer a liveness probe within ``timeout_s``."""
        return [i for i, answer in enumerate(_gather([h.ready.remote() for h in self.handles], timeout_s))
                if answer is None]

    def counters(self) -> list[dict]:
        """Each instance's engine counters (``RolloutInstance.engine_counters``); one that
        does not answer counts as zeros."""
        out = [c or {} for c in _gather([h.engine_counters.remote() for h in self.handles], 60.0)]
        keys = next((c.keys() for c in out if c), ())
        return [c or dict.fromkeys(keys, 0.0) for c in out]


def _gather(refs: list, timeout_s: float) -> list:
    """The results of ``refs`` (asked of every instance at once), None for each that
    failed or did not answer within ``timeout_s`` in all."""
    import ray

    ready, _ = ray.wait(refs, num_returns=len(refs), timeout=timeout_s)
    done = set(ready)
    out = []
    for ref in refs:
        try:
            out.append(ray.get(ref) if ref in done else None)
        except Exception:  # noqa: BLE001 - a dead actor: the caller replaces it
            out.append(None)
    return out
