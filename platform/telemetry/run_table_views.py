"""The team's runs page (``/teams/<slug>/runs/``): the runs table with its latest numbers,
served by telemetry (which stores the metrics) like the dashboard's series, so the runs app
never reads metrics."""
from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.shortcuts import render

from runs import queue
from runs.models import Experiment, Run
from runs.selectors import visible_runs
from teams.selectors import team_for_member, teams_of
from telemetry.run_table import PAGE_SIZE, SORTS, TableQuery, annotate_numbers, eta_s, progress_pct


@login_required
def team_runs(request, slug: str):
    """Runs of one team (50 a page), filtered by state, policy, tag and owner, searched by
    name, tag or id, sorted by any column; a queued run shows its place in the queue."""
    team, member = team_for_member(request.user, slug)
    query, errors = TableQuery.from_params(request.GET)
    team_qs = visible_runs(request.user).filter(experiment__team=team)
    runs = query.apply(annotate_numbers(team_qs))
    page = Paginator(runs, PAGE_SIZE).get_page(request.GET.get("page"))
    rows = list(page.object_list)
    places = queue.positions() if any(r.state == Run.State.QUEUED for r in rows) else {}
    for run in rows:
        run.queue_position = places.get(run.pk)
        run.eta = eta_s(run)
        run.progress = progress_pct(run)
        run.all_tags = list(dict.fromkeys([*run.tags, *run.experiment.tags]))
    kept = request.GET.copy()
    kept.pop("page", None)
    tags = sorted({t for ts in team_qs.values_list("tags", flat=True) for t in ts}
                  | {t for ts in team.experiments.values_list("tags", flat=True) for t in ts})
    policies = sorted({p for p in team_qs.order_by().values_list("config__rollout_policy", flat=True).distinct() if p})
    owners = sorted({o for o in team_qs.order_by().values_list("created_by__username", flat=True).distinct() if o})
    return render(request, "runs/list.html", {
        "team": team, "runs": rows, "page": page, "query": query, "errors": errors,
        "page_params": kept.urlencode(), "sorts": list(SORTS), "states": Run.State.values,
        "tags": tags, "policies": policies, "owners": owners, "can_submit": member.can_submit(),
        "teams": teams_of(request.user), "experiments": team.experiments.order_by("name"),
        "visibilities": Experiment.Visibility.choices})
