"""``/api/me/`` and team membership: everyone in a team reads it, admins change it."""
from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from api.errors import Conflict, error
from api.serializers import MemberSerializer, MeSerializer, TeamSerializer
from teams.models import Membership
from teams.selectors import team_for_member
from teams.services import LastAdmin, MembershipError, NoSuchMember, remove_member, set_role

_LAST_ADMIN = error(409, "the change would leave the team without an admin")


def _refused(exc: MembershipError) -> Exception:
    """The API error for a refused change: 404 for a user who is not there, 409 for the last admin."""
    if isinstance(exc, NoSuchMember):
        return NotFound(str(exc))
    if isinstance(exc, LastAdmin):
        return Conflict(str(exc))
    return ValidationError({"username": [str(exc)]})


def _teams(user) -> list[dict]:
    return [{"slug": m.team.slug, "name": m.team.name, "role": m.role}
            for m in Membership.objects.filter(user=user).select_related("team").order_by("team__name")]


class MeView(APIView):
    @extend_schema(responses=MeSerializer)
    def get(self, request):
        """The authenticated user and their teams with roles."""
        return Response({"username": request.user.username, "teams": _teams(request.user)})


class TeamListView(APIView):
    @extend_schema(responses=TeamSerializer(many=True))
    def get(self, request):
        """The user's teams with their role in each."""
        return Response(_teams(request.user))


class MemberListView(APIView):
    @extend_schema(responses=MemberSerializer(many=True))
    def get(self, request, slug: str):
        """Members of a team the user belongs to (404 for other teams)."""
        team, _ = team_for_member(request.user, slug)
        members = team.memberships.select_related("user").order_by("user__username")
        return Response([{"username": m.user.username, "role": m.role} for m in members])

    @extend_schema(request=MemberSerializer, responses={
        201: MemberSerializer, 404: error(404, "no such team for the user, or no such user"), 409: _LAST_ADMIN})
    def post(self, request, slug: str):
        """Add a user to the team or change their role (admins only)."""
        team, me = team_for_member(request.user, slug)
        if not me.can_manage():
            raise PermissionDenied("only team admins manage membership")
        data = MemberSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            member = set_role(team, data.validated_data["username"], data.validated_data["role"])
        except MembershipError as exc:
            raise _refused(exc) from None
        return Response({"username": member.user.username, "role": member.role}, status=status.HTTP_201_CREATED)


class MemberDetailView(APIView):
    @extend_schema(responses={204: None, 404: error(404, "no such team for the user, or no such member"),
                              409: _LAST_ADMIN})
    def delete(self, request, slug: str, username: str):
        """Remove a member (admins only; the last admin stays)."""
        team, me = team_for_member(request.user, slug)
        if not me.can_manage():
            raise PermissionDenied("only team admins manage membership")
        try:
            remove_member(team, username)
        except MembershipError as exc:
            raise _refused(exc) from None
        return Response(status=status.HTTP_204_NO_CONTENT)

