"""The JSON a run's dashboard page loads (the page itself is ``runs.views.run_dashboard``):
served by telemetry, which stores the metrics, so the runs app never reads them."""
from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import JsonResponse

from runs.selectors import run_for
from telemetry.selectors import latest_trace, series_for


@login_required
def run_series(request, run_id: int):
    """JSON for the dashboard: state, every metric series and the last trace (404 for runs
    the user may not see)."""
    run = run_for(request.user, run_id)
    return JsonResponse({"state": run.state, "series": series_for(run), "trace": latest_trace(run)})
