"""Read stored metrics for dashboards."""
from __future__ import annotations

from runs.models import Run
from telemetry.models import IterationTrace
from telemetry.series import metric_names, series_of
from telemetry.services import trace_for_browser

DASHBOARD_MAX_POINTS = 1500


def series_for(run: Run, x: str = "step") -> dict[str, list[list[float]]]:
    """``{metric name: [[x, value], ...]}`` sorted by step (``x`` as in ``series_of``), each
    series downsampled to at most 1,500 points (min/max buckets) so long runs load fast."""
    by_name = series_of([run.pk], metric_names([run.pk]), x=x, max_points=DASHBOARD_MAX_POINTS)
    return {name: [[x, y] for x, y in zip(s[run.pk]["x"], s[run.pk]["y"])] for name, s in by_name.items()}


def latest_trace(run: Run) -> dict | None:
    """The newest iteration's request trace as a dashboard gets it, or None."""
    trace = IterationTrace.objects.filter(run=run).order_by("-iteration").first()
    return trace_for_browser({"iteration": trace.iteration, "requests": trace.requests}) if trace else None


