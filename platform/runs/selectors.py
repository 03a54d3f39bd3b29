"""Read-side queries for runs; every lookup is scoped to what the user may see."""
from __future__ import annotations

from django.db.models import QuerySet
from django.http import Http404

from runs.models import Run


def visible_runs(user) -> QuerySet[Run]:
    """Runs of the teams ``user`` belongs to."""
    if not user.is_authenticated:
        return Run.objects.none()
    return Run.objects.filter(experiment__team__memberships__user=user).select_related("experiment__team")


def run_for(user, run_id: int) -> Run:
    """The run ``run_id`` if ``user`` may see it.

    Raises Http404 otherwise (a run of another team does not exist for the user).
    """
    try:
        return visible_runs(user).get(pk=run_id)
    except Run.DoesNotExist:
        raise Http404("no such run") from None
