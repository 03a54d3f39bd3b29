"""Read-side queries for experiments and runs; every lookup is scoped to what the user
may see, so pages, the API, WebSockets and exports share one rule:

a run is visible when its experiment's team has the user as a member (any role) or the
experiment is organization-wide (``visibility = org``). Invisible objects do not exist
for the user (404), and appear in no list, search or comparison.
"""
from __future__ import annotations

from django.db.models import Exists, OuterRef, Q, QuerySet
from django.http import Http404

from runs.models import Experiment, Run
from teams.models import Membership


def _member_of_team(user, team_field: str) -> Exists:
    return Exists(Membership.objects.filter(user=user, team=OuterRef(team_field)))


def visible_experiments(user) -> QuerySet[Experiment]:
    """Experiments of ``user``'s teams plus every organization-wide experiment."""
    if not user.is_authenticated:
        return Experiment.objects.none()
    return Experiment.objects.filter(Q(_member_of_team(user, "team")) | Q(visibility=Experiment.Visibility.ORG)
                                     ).select_related("team")


def visible_runs(user) -> QuerySet[Run]:
    """Runs of visible experiments (see the module docstring)."""
    if not user.is_authenticated:
        return Run.objects.none()
    return Run.objects.filter(Q(_member_of_team(user, "experiment__team"))
                              | Q(experiment__visibility=Experiment.Visibility.ORG)
                              ).select_related("experiment__team", "created_by")


def run_for(user, run_id: int) -> Run:
    """The run ``run_id`` if ``user`` may see it.

    Raises Http404 otherwise (a run of another team does not exist for the user).
    """
    try:
        return visible_runs(user).get(pk=run_id)
    except (Run.DoesNotExist, ValueError, TypeError, OverflowError):
        raise Http404("no such run") from None


def experiment_for(user, experiment_id: int) -> Experiment:
    """The experiment ``experiment_id`` if visible to ``user``; raises Http404 otherwise."""
    try:
        return visible_experiments(user).get(pk=experiment_id)
    except (Experiment.DoesNotExist, ValueError, TypeError, OverflowError):
        raise Http404("no such experiment") from None


def can_act_on(user, run: Run) -> bool:
    """Whether ``user`` may cancel (or otherwise change) ``run``: members and admins of its team."""
    from teams.selectors import membership

    member = membership(user, run.experiment.team)
    return member is not None and member.can_submit()
