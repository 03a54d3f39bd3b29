"""Derived data of ended runs, stored once (ours): a run's downsampled series and summary
statistics do not change after it ends, so the first comparison that needs them (or the
warm-up task at its end) computes them and every later one reads the row, cold cache or not."""
from django.db import models

from runs.models import Run


class StoredDerived(models.Model):
    """One value derived from one run's points: ``kind`` names what (``series-1500``: the
    downsampled series at 1500 points, ``stats``: the summary statistics), ``part`` of what
    (the metric name); ``version`` is the run's version (``telemetry.series_cache.run_versions``)
    it was computed at; a row of another version is stale and recomputed."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="stored_derived")
    kind = models.CharField(max_length=40)
    part = models.CharField(max_length=300)
    version = models.CharField(max_length=64)
    value = models.JSONField(null=True)  # null: the run has no such data

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "kind", "part"], name="stored_derived_once")]
