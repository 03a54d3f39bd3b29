"""Read stored metrics for dashboards."""
from __future__ import annotations

from runs.models import Run
from telemetry.models import IterationTrace, MetricPoint


def series_for(run: Run) -> dict[str, list[list[float]]]:
    """``{metric name: [[step, value], ...]}`` sorted by step."""
    series: dict[str, list[list[float]]] = {}
    for name, step, value in MetricPoint.objects.filter(run=run).order_by("name", "step").values_list(
            "name", "step", "value"):
        series.setdefault(name, []).append([step, value])
    return series


def latest_trace(run: Run) -> dict | None:
    """The newest iteration's request trace, or None."""
    trace = IterationTrace.objects.filter(run=run).order_by("-iteration").first()
    return {"iteration": trace.iteration, "requests": trace.requests} if trace else None
