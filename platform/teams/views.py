"""Team pages: members (everyone in the team reads; admins add, change roles, remove)."""
from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponseForbidden
from django.shortcuts import redirect, render

from teams.models import Membership
from teams.selectors import team_for_member
from teams.services import MembershipError, remove_member, set_role


class MemberForm(forms.Form):
    username = forms.CharField(max_length=150)
    role = forms.ChoiceField(choices=Membership.Role.choices, initial=Membership.Role.MEMBER)
    remove = forms.BooleanField(required=False)


@login_required
def members(request, slug: str):
    """``/teams/<slug>/members/``: the member list; POST (admins) changes it."""
    team, me = team_for_member(request.user, slug)
    form = MemberForm(request.POST or None)
    if request.method == "POST":
        if not me.can_manage():
            return HttpResponseForbidden("only team admins manage membership")
        if form.is_valid():
            name = form.cleaned_data["username"]
            try:
                if form.cleaned_data["remove"]:
                    remove_member(team, name)
                    messages.info(request, f"Removed {name}.")
                else:
                    set_role(team, name, form.cleaned_data["role"])
                    messages.info(request, f"{name} is now {form.cleaned_data['role']}.")
                return redirect("team-members", slug=slug)
            except MembershipError as exc:
                form.add_error("username", str(exc))
    status = 400 if request.method == "POST" else 200
    rows = team.memberships.select_related("user").order_by("user__username")
    return render(request, "teams/members.html", {"team": team, "members": rows, "form": form,
                                                  "can_manage": me.can_manage()}, status=status)
