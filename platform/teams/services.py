"""Membership changes (admins only; checked by the caller). A team always keeps an admin."""
from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import transaction

from teams.models import Membership, Team


class MembershipError(ValueError):
    """A refused membership change; the message says why."""


class NoSuchMember(MembershipError):
    """The user named does not exist (or, for a removal, is not in the team)."""


class LastAdmin(MembershipError):
    """The change would leave the team without an admin."""


def _keep_an_admin(team: Team, user, new_role: str | None) -> None:
    admins = list(team.memberships.select_for_update().filter(role=Membership.Role.ADMIN)
                  .values_list("user_id", flat=True))
    if admins == [user.pk] and new_role != Membership.Role.ADMIN:
        raise LastAdmin("a team keeps at least one admin")


def set_role(team: Team, username: str, role: str) -> Membership:
    """Add ``username`` to ``team`` with ``role``, or change their role.

    Raises MembershipError for an unknown user or role, or when it would leave no admin.
    """
    if role not in Membership.Role.values:
        raise MembershipError(f"role must be one of {', '.join(Membership.Role.values)}")
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise NoSuchMember("no such user")
    with transaction.atomic():
        _keep_an_admin(team, user, role)
        member, _ = Membership.objects.update_or_create(user=user, team=team, defaults={"role": role})
    return member


def remove_member(team: Team, username: str) -> None:
    """Remove ``username`` from ``team``. Raises MembershipError if not a member or the last admin."""
    with transaction.atomic():
        member = team.memberships.filter(user__username=username).select_related("user").first()
        if member is None:
            raise NoSuchMember("not a member of this team")
        _keep_an_admin(team, member.user, None)
        member.delete()
