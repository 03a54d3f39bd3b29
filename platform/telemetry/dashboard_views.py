"""The JSON a run's dashboard page loads (the page itself is ``runs.views.run_dashboard``):
served by telemetry, which stores the metrics, so the runs app never reads them."""
from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import JsonResponse

from runs.selectors import run_for
from telemetry.headline import headline
from telemetry.selectors import latest_trace, series_for


@login_required
def run_series(request, run_id: int):
    """JSON for the dashboard: state, every metric series and the last trace (404 for runs
    the user may not see). ``?x=relative`` gives seconds since the run's first point
    instead of iterations on the x axis (400 for another value than step or relative)."""
    run = run_for(request.user, run_id)
    x = request.GET.get("x", "step")
    if x not in ("step", "relative"):
        return JsonResponse({"detail": "x must be step or relative"}, status=400)
    return JsonResponse({"state": run.state, "x": x, "series": series_for(run, x), "trace": latest_trace(run)})


@login_required
def run_headline(request, run_id: int):
    """The run's headline numbers and their ratios to its reference run (``telemetry.headline``)."""
    return JsonResponse(headline(request.user, run_for(request.user, run_id)))
