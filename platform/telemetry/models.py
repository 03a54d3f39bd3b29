"""Stored metrics: batches (for exactly-once), points and per-iteration request traces."""
from django.db import models

from runs.models import Run


class MetricBatch(models.Model):
    """A received batch; the unique (run, seq) makes a retried batch a no-op."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="metric_batches")
    seq = models.PositiveIntegerField()
    received_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "seq"], name="batch_once_per_seq")]


class MetricPoint(models.Model):
    """One scalar of one metric at one step (iteration) of a run."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="metric_points")
    name = models.CharField(max_length=200)
    step = models.PositiveIntegerField()
    value = models.FloatField()
    wall_time = models.DateTimeField(auto_now_add=True)

    class Meta:
        # The unique constraint's index also serves the series queries (run, name, step order).
        constraints = [models.UniqueConstraint(fields=["run", "name", "step"], name="point_once_per_step")]


class IterationTrace(models.Model):
    """The requests of one rollout iteration (group, index, instance, start/finish
    seconds from the rollout start, prompt and output tokens, finish reason, policy version,
    chunks) and ``meta``: the set-up it ran on (policy, instances, capacity, KV GiB, max tokens)."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="traces")
    iteration = models.PositiveIntegerField()
    requests = models.JSONField()
    meta = models.JSONField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "iteration"], name="trace_once_per_iteration")]
