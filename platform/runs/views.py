"""HTML pages for runs: team run list, the run form, the run dashboard, cancel, resume
(the dashboard's series JSON is ``telemetry.dashboard_views``)."""
from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponseForbidden
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from runs import queue
from runs.forms import RunForm
from runs.models import Experiment, Run
from runs.selectors import can_act_on, run_for, visible_runs
from runs.services import RESUMABLE, SubmissionRefused, create_run, request_cancel, request_resume, update_experiment
from teams.selectors import team_for_member, teams_of


@login_required
def home(request):
    """Redirect to the first team's runs."""
    team = teams_of(request.user).first()
    if team is None:
        return render(request, "runs/no_team.html", status=200)
    return redirect("team-runs", slug=team.slug)


@login_required
def team_runs(request, slug: str):
    """Runs of one team, newest first; a queued run shows its place in the queue."""
    team, member = team_for_member(request.user, slug)
    runs = list(visible_runs(request.user).filter(experiment__team=team).order_by("-created_at")[:200])
    if any(run.state == Run.State.QUEUED for run in runs):
        places = queue.positions()
        for run in runs:
            run.queue_position = places.get(run.pk)
    return render(request, "runs/list.html", {"team": team, "runs": runs, "can_submit": member.can_submit(),
                                              "teams": teams_of(request.user),
                                              "experiments": team.experiments.order_by("name"),
                                              "visibilities": Experiment.Visibility.choices})


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


@login_required
def new_run(request, slug: str):
    """The run form; stores nothing unless every field is valid."""
    team, member = team_for_member(request.user, slug)
    if not member.can_submit():
        return HttpResponseForbidden("viewers cannot submit runs")
    form = RunForm(request.POST or None, request.FILES or None)
    status = 400 if request.method == "POST" else 200
    if request.method == "POST" and form.is_valid():
        try:
            run = create_run(request.user, team, form.cleaned_data["experiment"], form.cleaned_data["config"])
        except SubmissionRefused as exc:  # the team's queue is full, or the user's rate is spent
            form.add_error(None, str(exc))
            status = 429
        else:
            return redirect("run-dashboard", run_id=run.pk)
    return render(request, "runs/new.html", {"team": team, "form": form}, status=status)


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
                                                   "can_cancel": can_act_on(request.user, run),
                                                   "resumable": run.state in RESUMABLE})


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
