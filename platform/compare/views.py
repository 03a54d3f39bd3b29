"""The compare page: a run picker (filters over every run the user may see) and the
comparison itself, drawn in the browser from ``/api/compare/`` (frontend/src/compare.ts)."""
from __future__ import annotations

import typing
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render

from runs.filters import RunFilter
from runs.models import Run
from runs.selectors import visible_experiments, visible_runs
from teams.models import Team
from teams.selectors import teams_of
from umbra.config import RolloutPolicy

PICKER_LIMIT = 200
POLICIES = typing.get_args(RolloutPolicy)


def _selected_ids(request) -> list[int]:
    ids: list[int] = []
    for raw in request.GET.getlist("runs"):
        ids += [int(v) for v in raw.split(",") if v.strip().isascii() and v.strip().isdigit() and len(v.strip()) < 18]
    return list(dict.fromkeys(ids))


@login_required
def compare_page(request):
    """``/compare/?runs=1,2&team=..&policy=..``: pick runs, then see them overlaid."""
    if any(v == "" for v in request.GET.values()):  # keep shared URLs short: drop empty filters
        kept = [(k, v) for k in request.GET for v in request.GET.getlist(k) if v != ""]
        return redirect(f"{request.path}?{urlencode(kept)}" if kept else request.path)
    picker = RunFilter(request.GET, queryset=visible_runs(request.user).order_by("-created_at", "-pk"))
    # The latest PICKER_LIMIT runs; when more match, the page says so (never drops them silently).
    candidates = list(picker.qs[:PICKER_LIMIT + 1]) if picker.is_valid() else []
    matching = len(candidates)
    if matching > PICKER_LIMIT:
        candidates = candidates[:PICKER_LIMIT]
        matching = picker.qs.count()
    selected = _selected_ids(request)
    teams = Team.objects.filter(experiments__in=visible_experiments(request.user)).distinct().order_by("name")
    shown = {r.pk for r in candidates}
    return render(request, "compare/compare.html", {
        "picker": picker, "candidates": candidates, "selected": selected, "matching": matching,
        "picker_limit": PICKER_LIMIT, "truncated": matching > len(candidates),
        "view_params": [(k, request.GET[k]) for k in ("x", "smooth", "metrics") if request.GET.get(k)],
        "hidden_selected": [i for i in selected if i not in shown], "policies": POLICIES, "teams": teams,
        "states": Run.State.choices, "my_teams": teams_of(request.user)})
