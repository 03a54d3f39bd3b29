"""Read-through storage of ended runs' derived data (ours; the model is
``compare.models.StoredDerived``): ended runs are read from their stored rows, the rest
come from ``compute`` (itself cached in Redis), and what was computed for ended runs is
stored, so the cold path of a comparison of finished runs is one indexed read."""
from __future__ import annotations

from collections.abc import Callable, Hashable

from django.db import IntegrityError, transaction
from django.db.models import TextField
from django.db.models.functions import Cast

from compare.models import StoredDerived
from runs.models import Run

try:  # the stored series are the bulk of a cold comparison: msgspec parses them several times faster
    from msgspec.json import decode as _parse
except ImportError:  # pragma: no cover - msgspec is in the lock file; json gives the same values
    from json import loads as _parse


def stored_per_run(kind: str, run_ids: list[int], parts: list[str], versions: dict[int, str],
                   compute: Callable[[list[int], list[Hashable]], dict[tuple[int, str], object]]
                   ) -> dict[tuple[int, str], object]:
    """``{(run_id, part): value}`` like ``telemetry.series_cache.cached_per_run``; values of
    ended runs at their current version are read from (and, when computed, written to) the
    database. A pair absent from ``compute``'s answer has no data: stored as null, not served."""
    ended = set(Run.objects.filter(pk__in=run_ids, state__in=Run.TERMINAL).values_list("pk", flat=True))
    out: dict[tuple[int, str], object] = {}
    known: set[tuple[int, str]] = set()  # stored, with data or as "none" (a metric the run never logged)
    if ended:
        # The value as JSON text, parsed here (only rows of the current version): Django's
        # JSONField would parse every row with json.loads, most of a cold comparison's time.
        for run_id, part, version, text in StoredDerived.objects.filter(
                run_id__in=ended, kind=kind, part__in=parts).values_list(
                "run_id", "part", "version", Cast("value", output_field=TextField())):
            if version == versions.get(run_id):
                known.add((run_id, part))
                if text is not None:
                    value = _parse(text)
                    if value is not None:
                        out[(run_id, part)] = value
    missing = [(r, p) for r in run_ids if r in versions for p in parts if (r, p) not in known]
    if not missing:
        return out
    fresh = compute(sorted({r for r, _ in missing}), sorted({p for _, p in missing}))
    rows = [StoredDerived(run_id=r, kind=kind, part=p, version=versions[r], value=fresh.get((r, p)))
            for r, p in missing if r in ended]
    if rows:
        try:
            with transaction.atomic():
                StoredDerived.objects.filter(run_id__in={row.run_id for row in rows}, kind=kind,
                                             part__in={row.part for row in rows}).delete()  # stale versions
                StoredDerived.objects.bulk_create(rows, ignore_conflicts=True)
        except IntegrityError:  # a concurrent request stored them first: theirs are as good
            pass
    out.update({pair: fresh[pair] for pair in missing if pair in fresh})
    return out
