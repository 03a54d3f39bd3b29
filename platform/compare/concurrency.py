"""Which compared runs shared a cluster at the same time (ours): two runs whose rollouts
overlapped on one Ray cluster competed for it, so their throughput ratio says as much
about the overlap as about the rollout policy. A run that shared its cluster with a run
outside the comparison (a demo run, another team's) is flagged too."""
from __future__ import annotations

from datetime import datetime
from itertools import combinations

from django.db.models import Q
from django.db.models.functions import Coalesce

from runs.models import Run
from runs.overlap import busy_interval, ran_concurrently
from runs.selectors import visible_runs

# Runs looked at per compared run for a cluster shared with runs outside the comparison.
MAX_OTHERS = 500


def concurrent_pairs(runs, now: datetime) -> list[list[int]]:
    """``[[a, b], ...]`` (ids in the given order): the pairs of ``runs`` that were on the same
    cluster at overlapping times (touching ends do not overlap)."""
    return [[a.pk, b.pk] for a, b in combinations(runs, 2) if ran_concurrently(a, b, now)]


def shared_with_others(runs, user, now: datetime) -> dict[str, dict]:
    """``{"<run id>": {"runs": [ids the viewer may see], "hidden": n}}`` for each of ``runs``
    that shared its cluster, while it ran, with runs not in the comparison; runs the viewer
    may not see are only counted (their ids are another team's business)."""
    compared = {r.pk for r in runs}
    out: dict[str, dict] = {}
    for run in runs:
        span = busy_interval(run, now)
        if span is None:
            continue
        start, end = span
        others = (Run.objects.exclude(pk__in=compared)
                  .annotate(busy_from=Coalesce("dispatched_at", "started_at"))
                  .filter(busy_from__lt=end).filter(Q(finished_at__isnull=True) | Q(finished_at__gt=start))
                  .only("pk", "config", "dispatched_at", "started_at", "finished_at").order_by("-pk")[:MAX_OTHERS])
        overlapping = [o.pk for o in others if ran_concurrently(run, o, now)]
        if overlapping:
            shown = sorted(visible_runs(user).filter(pk__in=overlapping).values_list("pk", flat=True))
            out[str(run.pk)] = {"runs": shown, "hidden": len(overlapping) - len(shown)}
    return out
