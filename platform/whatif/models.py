"""A what-if simulation: a workload, a cluster shape and policies, simulated by Celery."""
from __future__ import annotations

from django.conf import settings
from django.db import models

from teams.models import Team


class Simulation(models.Model):
    """``params``: the validated form (workload, group size, cluster overrides, policies,
    accept length, shared KV); ``trace``: the request records of a run's or an uploaded
    trace (None for presets); ``results``: per-policy rows and chart data once done."""

    class State(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="simulations")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True)
    created_at = models.DateTimeField(auto_now_add=True)
    label = models.CharField(max_length=200)
    params = models.JSONField()
    trace = models.JSONField(null=True, blank=True)
    source_run = models.ForeignKey("runs.Run", on_delete=models.SET_NULL, null=True, blank=True)
    state = models.CharField(max_length=10, choices=State.choices, default=State.QUEUED)
    error = models.TextField(blank=True)
    results = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
