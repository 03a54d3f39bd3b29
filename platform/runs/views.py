"""HTML pages for runs: team run list, the run form, the run dashboard, cancel, resume
(the dashboard's series JSON is ``telemetry.dashboard_views``)."""
from __future__ import annotations

import yaml
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponseForbidden
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from runs import queue
from runs.labels import parse_tags, update_labels
from runs.models import Experiment, Run
from runs.model_export import may_download, model_checkpoint
from runs.selectors import can_act_on, run_for
from runs.services import RESUMABLE, SubmissionRefused, request_cancel, request_resume, update_experiment
from teams.selectors import team_for_member, teams_of


@login_required
def home(request):
    """Redirect to the first team's runs."""
    team = teams_of(request.user).first()
    if team is None:
        return render(request, "runs/no_team.html", status=200)
    return redirect("team-runs", slug=team.slug)


@login_required
@require_POST
def experiment_visibility(request, slug: str, experiment_id: int):
    """Set an experiment's visibility (members and admins of its team)."""
    team, member = team_for_member(request.user, slug)
    experiment = get_object_or_404(Experiment, pk=experiment_id, team=team)
    if not member.can_submit():
        return HttpResponseForbidden("viewers cannot change experiments")
    try:
        update_experiment(experiment, visibility=request.POST.get("visibility", ""))
    except ValueError as exc:
        messages.error(request, str(exc))
    else:
        messages.info(request, f"Experiment '{experiment.name}' is now visible to: {experiment.get_visibility_display()}.")
    return redirect("team-runs", slug=slug)


DASHBOARD_EVENTS = 200


@login_required
def run_dashboard(request, run_id: int):
    """Live dashboard of one run (404 for runs of other teams)."""
    run = run_for(request.user, run_id)
    total = run.events.count()
    events = list(run.events.all()[max(0, total - DASHBOARD_EVENTS):])  # the latest; the API has them all
    place = queue.positions().get(run.pk) if run.state == Run.State.QUEUED else None
    return render(request, "runs/dashboard.html", {"run": run, "events": events, "queue_position": place,
                                                   "events_hidden": total - len(events),
                                                   "has_job_events": any(e.kind == "job" for e in events),
                                                   "config": sorted(run.config.items()),
                                                   "config_yaml": yaml.safe_dump(run.config, sort_keys=True),
                                                   "tags_text": " ".join(run.tags),
                                                   "can_cancel": can_act_on(request.user, run),
                                                   "resumable": run.state in RESUMABLE,
                                                   "can_download": may_download(request.user, run),
                                                   "model_checkpoint": model_checkpoint(request.user, run)})


@login_required
@require_POST
def run_cancel(request, run_id: int):
    """Cancel a run (members and admins of its team)."""
    run = run_for(request.user, run_id)
    if not can_act_on(request.user, run):
        return HttpResponseForbidden("only members of the run's team cancel it")
    if run.is_terminal:
        messages.info(request, f"Run #{run.pk} has already ended ({run.state}).")
    else:
        request_cancel(run)
        messages.info(request, f"Cancel requested for run #{run.pk}; the state changes once the Ray job stops.")
    return redirect("run-dashboard", run_id=run.pk)


@login_required
@require_POST
def run_resume(request, run_id: int):
    """Resume a failed or cancelled run from its latest checkpoint (members and admins of its team)."""
    run = run_for(request.user, run_id)
    if not can_act_on(request.user, run):
        return HttpResponseForbidden("only members of the run's team resume it")
    try:
        resumed = request_resume(run)
    except SubmissionRefused as exc:
        messages.error(request, f"Run #{run.pk} was not resumed: {exc}")
        return redirect("run-dashboard", run_id=run.pk)
    if resumed:
        messages.info(request, f"Run #{run.pk} resumes from its latest checkpoint.")
    else:
        messages.info(request, f"Run #{run.pk} is {run.state}; only failed or cancelled runs resume.")
    return redirect("run-dashboard", run_id=run.pk)


@login_required
@require_POST
def run_labels(request, run_id: int):
    """Set the run's name, tags (comma- or space-separated) and note from the run page
    (members and admins of its team); a field not posted keeps its value; a bad value comes
    back as a message."""
    run = run_for(request.user, run_id)
    if not can_act_on(request.user, run):
        return HttpResponseForbidden("only members of the run's team label it")
    try:
        # only what was posted changes, as the API's PATCH (a field left out keeps its value)
        changes = {k: request.POST[k] for k in ("name", "note") if k in request.POST}
        if "tags" in request.POST:
            changes["tags"] = parse_tags(request.POST["tags"])
        update_labels(run, changes)
    except ValueError as exc:
        messages.error(request, f"Labels not saved: {exc}")
    else:
        messages.info(request, f"Labels of run #{run.pk} saved.")
    return redirect("run-dashboard", run_id=run.pk)
