"""Experiments, runs and the state transitions of a run."""
from django.conf import settings
from django.db import models
from django.utils import timezone

from teams.models import Team


class Experiment(models.Model):
    """A named family of runs owned by a team; ``visibility`` says who may read its runs:
    the team only, or every user of the organization (read-only for other teams)."""

    class Visibility(models.TextChoices):
        TEAM = "team"
        ORG = "org"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="experiments")
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True, max_length=5000)
    tags = models.JSONField(default=list, blank=True)
    visibility = models.CharField(max_length=4, choices=Visibility.choices, default=Visibility.TEAM)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["team", "name"], name="experiment_name_per_team")]

    def __str__(self) -> str:
        return self.name


def submission_id(run_id: int, attempt: int) -> str:
    """The Ray job id of attempt ``attempt`` of run ``run_id``."""
    return f"umbra-run-{run_id}" if not attempt else f"umbra-run-{run_id}-a{attempt}"


class Run(models.Model):
    """One GRPO run: a validated config (``umbra.config.RunConfig`` JSON) and its lifecycle
    ``queued -> dispatching -> running -> succeeded | failed | cancelled``."""

    class State(models.TextChoices):
        QUEUED = "queued"
        DISPATCHING = "dispatching"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"
        CANCELLED = "cancelled"

    TERMINAL = (State.SUCCEEDED, State.FAILED, State.CANCELLED)

    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="runs")
    # What the team calls the run, its own tags (beside the experiment's) and a free note.
    name = models.CharField(max_length=200, blank=True)
    tags = models.JSONField(default=list, blank=True)
    note = models.TextField(blank=True, max_length=5000)
    config = models.JSONField()
    state = models.CharField(max_length=12, choices=State.choices, default=State.QUEUED, db_index=True)
    ray_job_id = models.CharField(max_length=100, blank=True)
    ingest_token_hash = models.CharField(max_length=64, blank=True)
    ingest_token_expires_at = models.DateTimeField(null=True, blank=True)
    # Bumped by Resume: each attempt is its own Ray job (the submission id says which).
    attempt = models.PositiveIntegerField(default=0)
    log_tail = models.TextField(blank=True)
    # Bumped by every stored metric batch: the version under which derived series are cached.
    metrics_version = models.PositiveBigIntegerField(default=0)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    # When the run (or its latest attempt, after a resume) joined the queue: its place
    # among its team's waiting runs (FIFO). See runs.queue.
    queued_at = models.DateTimeField(default=timezone.now)
    # When the queue last handed the run to the dispatcher: the team served longest ago
    # goes first (round-robin between teams).
    dispatched_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # The run this one waits for: the queue passes it over until that run has ended (the A/B
    # launcher queues its runs one after another on the same cluster). See runs.queue.
    after = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="followers")

    @property
    def is_terminal(self) -> bool:
        return self.state in self.TERMINAL

    @property
    def submission_id(self) -> str:
        """The Ray job's submission id, derived from the run id and attempt so dispatch is
        idempotent (a resumed run's attempt gets a job of its own)."""
        return submission_id(self.pk, self.attempt)

    def __str__(self) -> str:
        return f"run {self.pk} ({self.state})"


class RunEvent(models.Model):
    """One entry of a run's event log: a state transition (``kind`` state), or a note the
    job reported (``kind`` job: a rollout instance died and was replaced, a resume from a
    checkpoint), with when and why."""

    class Kind(models.TextChoices):
        STATE = "state"
        JOB = "job"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="events")
    kind = models.CharField(max_length=8, choices=Kind.choices, default=Kind.STATE)
    from_state = models.CharField(max_length=12, blank=True)
    to_state = models.CharField(max_length=12)
    reason = models.TextField(blank=True)
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["at", "pk"]
