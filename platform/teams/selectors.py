"""Read-side queries about teams and access (HackSoft styleguide 'selectors')."""
from __future__ import annotations

from django.db.models import QuerySet

from teams.models import Membership, Team


def teams_of(user) -> QuerySet[Team]:
    """Teams ``user`` belongs to (empty for anonymous users)."""
    if not user.is_authenticated:
        return Team.objects.none()
    return Team.objects.filter(memberships__user=user).order_by("name")


def membership(user, team: Team) -> Membership | None:
    """``user``'s membership in ``team``, or None."""
    if not user.is_authenticated:
        return None
    return Membership.objects.filter(user=user, team=team).first()


def team_for_member(user, slug: str) -> tuple[Team, Membership]:
    """``(team, membership)`` for a team ``user`` belongs to.

    Raises Http404 when the team does not exist or ``user`` is not in it (other teams
    do not exist for the user).
    """
    from django.http import Http404

    member = Membership.objects.filter(user=user, team__slug=slug).select_related("team").first() \
        if user.is_authenticated else None
    if member is None:
        raise Http404("no such team")
    return member.team, member
