"""The launcher's pages (ours): the run form (sections, YAML, Clone of an existing run,
A/B) and the A/B status page that opens the comparison once every run has ended."""
from __future__ import annotations

from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponseForbidden
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse

from runs import queue
from runs.ab import BASELINE, launch_ab
from runs.forms import AB_ABLATIONS, RunForm
from runs.models import Experiment, Run
from runs.selectors import run_for, visible_runs
from runs.services import SubmissionRefused, create_run
from teams.selectors import team_for_member
from umbra.config import RunConfig


def _clone_initial(request) -> tuple[dict, Run | None]:
    """The form's initial values from ``?clone=<run id>`` (a run the user may see), else none."""
    raw = request.GET.get("clone", "")
    if not raw:
        return {}, None
    if not (raw.isascii() and raw.isdigit() and len(raw) < 18):
        raise Http404("no such run")
    run = run_for(request.user, int(raw))
    initial = {k: v for k, v in run.config.items() if k in RunConfig.model_fields}
    initial["experiment"] = run.experiment.name
    return initial, run


@login_required
def new_run(request, slug: str):
    """The run form; stores nothing unless every field is valid. The "A/B" button queues
    the config under the baseline and seer (and the ticked ablations) instead."""
    team, member = team_for_member(request.user, slug)
    if not member.can_submit():
        return HttpResponseForbidden("viewers cannot submit runs")
    initial, cloned = _clone_initial(request) if request.method != "POST" else ({}, None)
    form = RunForm(request.POST or None, request.FILES or None, initial=initial, team_slug=team.slug)
    status = 400 if request.method == "POST" else 200
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            if "ab" in request.POST:
                chosen = set(data.get("ab_ablations") or [])
                ablations = [(label, changes) for value, label, changes in AB_ABLATIONS if value in chosen]
                runs = launch_ab(request.user, team, data["experiment"], data["config"], ablations)
            else:
                run = create_run(request.user, team, data["experiment"], data["config"])
        except SubmissionRefused as exc:  # the team's queue is full, or the user's rate is spent
            form.add_error(None, str(exc))
            status = 429
        else:
            if "ab" in request.POST:
                return redirect("ab-status", slug=team.slug, experiment_id=runs[0].experiment_id)
            return redirect("run-dashboard", run_id=run.pk)
    return render(request, "runs/new.html", {"team": team, "form": form, "cloned": cloned,
                                             "baseline": BASELINE}, status=status)


@login_required
def ab_status(request, slug: str, experiment_id: int):
    """An A/B experiment's runs and their states; once all have ended, their comparison
    (the baseline as reference). The page reloads itself until then."""
    team, _ = team_for_member(request.user, slug)
    experiment = get_object_or_404(Experiment, pk=experiment_id, team=team)
    runs = list(visible_runs(request.user).filter(experiment=experiment).select_related("after").order_by("pk"))
    if not runs:
        raise Http404("this experiment has no runs")
    compare_url = f"{reverse('compare')}?{urlencode({'runs': ','.join(str(r.pk) for r in runs)})}"
    if all(r.is_terminal for r in runs):
        return redirect(compare_url)
    places = queue.positions()
    for run in runs:
        run.queue_position = places.get(run.pk)
    return render(request, "runs/ab_status.html", {"team": team, "experiment": experiment, "runs": runs,
                                                   "compare_url": compare_url})
