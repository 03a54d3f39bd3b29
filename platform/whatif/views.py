"""What-if pages: the simulation form, a team's simulations, one simulation's results."""
from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponseForbidden, JsonResponse
from django.shortcuts import redirect, render

from teams.selectors import team_for_member
from whatif.forms import SimulationForm
from whatif.models import Simulation
from whatif.services import create_simulation


def _simulation_for(user, pk: int) -> Simulation:
    """A simulation of one of ``user``'s teams; Http404 for any other."""
    sim = Simulation.objects.filter(pk=pk, team__memberships__user=user).select_related("team", "source_run").first() \
        if user.is_authenticated else None
    if sim is None:
        raise Http404("no such simulation")
    return sim


@login_required
def team_simulations(request, slug: str):
    """The team's simulations and the form for a new one (members and admins submit)."""
    team, member = team_for_member(request.user, slug)
    form = SimulationForm(request.POST or None, request.FILES or None, user=request.user)
    if request.method == "POST":
        if not member.can_submit():
            return HttpResponseForbidden("viewers cannot start simulations")
        if form.is_valid():
            d = form.cleaned_data
            sim = create_simulation(team, request.user, d["params"], d["trace"], d["source_run"])
            return redirect("simulation", pk=sim.pk)
    sims = Simulation.objects.filter(team=team).only("pk", "label", "state", "created_at", "params")[:100]
    return render(request, "whatif/list.html", {"team": team, "form": form, "simulations": sims,
                                                "can_submit": member.can_submit()},
                  status=400 if request.method == "POST" else 200)


@login_required
def simulation(request, pk: int):
    """One simulation: per-policy table and bars, timelines and latency CDFs."""
    sim = _simulation_for(request.user, pk)
    measured = None
    if sim.source_run_id:  # the traced iteration's measured numbers, to set beside the simulated ones
        from telemetry.models import MetricPoint

        measured = dict(MetricPoint.objects.filter(
            run_id=sim.source_run_id, step=sim.params.get("iteration"),
            name__in=("rollout/time_s", "rollout/throughput_tok_s", "rollout/tail_time_s")).values_list("name", "value"))
        measured = measured or None
    return render(request, "whatif/detail.html", {"sim": sim, "measured": measured})


@login_required
def simulation_json(request, pk: int):
    """State and results of a simulation (polled by the result page until it ends)."""
    sim = _simulation_for(request.user, pk)
    return JsonResponse({"state": sim.state, "error": sim.error, "results": sim.results, "params": sim.params})


@login_required
def home(request):
    """The first team's what-if page."""
    from teams.selectors import teams_of

    team = teams_of(request.user).first()
    if team is None:
        return render(request, "runs/no_team.html")
    return redirect("team-simulations", slug=team.slug)
