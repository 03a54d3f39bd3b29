"""Write-side operations on experiments and runs (HackSoft styleguide 'services'): views,
the API and commands change runs only through here.

The lifecycle itself (``transition``, ``RESUMABLE``) lives in ``runs.lifecycle`` and is
re-exported here; when a queued run is dispatched is ``runs.queue``'s decision, the
submission limits are ``runs.limits``, the Ray dispatch is ``runs.dispatch``, the
ingestion token ``runs.ingest_tokens``. Services that hand work to Celery import
``runs.tasks``; nothing those tasks import imports this module back.
"""
from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.utils import timezone

from runs import queue
from runs.ingest_tokens import revoke_ingest_token
from runs.lifecycle import RESUMABLE, transition
from runs.limits import SubmissionRefused, check_submission, check_team_queue
from runs.models import Experiment, Run, RunEvent
from runs.tasks import cancel_run, request_pump
from teams.models import Team
from umbra.config import RunConfig

__all__ = ["RESUMABLE", "ExperimentNameTaken", "SubmissionRefused", "create_experiment", "create_run",
           "preview_run", "request_cancel", "request_resume", "transition", "update_experiment"]

EDITABLE_EXPERIMENT_FIELDS = ("description", "tags", "visibility")


class ExperimentNameTaken(ValueError):
    """The team already has an experiment of that name."""


def create_experiment(team, name: str, description: str = "", tags: list[str] | None = None,
                      visibility: str = Experiment.Visibility.TEAM) -> Experiment:
    """Store a new experiment of ``team``. Raises ExperimentNameTaken if the name is taken."""
    try:
        with transaction.atomic():
            return Experiment.objects.create(team=team, name=name, description=description, tags=tags or [],
                                             visibility=visibility)
    except IntegrityError:
        raise ExperimentNameTaken("this team already has an experiment of that name") from None


def update_experiment(experiment: Experiment, **changes) -> Experiment:
    """Change ``experiment``'s description, tags or visibility (the name is fixed: runs and
    links refer to it). Raises ValueError for a visibility that is not one of the choices."""
    unknown = set(changes) - set(EDITABLE_EXPERIMENT_FIELDS)
    if unknown:
        raise TypeError(f"not editable: {', '.join(sorted(unknown))}")
    if "visibility" in changes and changes["visibility"] not in Experiment.Visibility.values:
        raise ValueError(f"visibility must be one of {', '.join(Experiment.Visibility.values)}")
    for field, value in changes.items():
        setattr(experiment, field, value)
    experiment.save(update_fields=list(changes))
    return experiment


def create_run(user, team, experiment_name: str, config: RunConfig) -> Run:
    """Store a queued run of ``config`` under the team's experiment ``experiment_name``
    (created if new) and, once committed, have the queue look at it (``runs.queue``: it
    is dispatched when its cluster can hold it).

    Raises SubmissionRefused (nothing stored) past the team's or the user's limits
    (``runs.limits``); the team and user rows stay locked until commit so that two
    submissions at once are counted one after the other.
    """
    with transaction.atomic():
        Team.objects.select_for_update().filter(pk=team.pk).first()
        if user is not None:
            get_user_model().objects.select_for_update().filter(pk=user.pk).first()
        check_submission(user, team)
        experiment, _ = Experiment.objects.get_or_create(team=team, name=experiment_name.strip())
        run = Run.objects.create(experiment=experiment, config=config.model_dump(), created_by=user)
        RunEvent.objects.create(run=run, from_state="", to_state=Run.State.QUEUED, reason="submitted")
        transaction.on_commit(request_pump)
    return run


def preview_run(user, team, experiment_name: str, config: RunConfig) -> dict:
    """What :func:`create_run` would do, storing nothing (a validate-only submission):
    the normalised config, the team, the experiment name and the 1-based place the run
    would take in its cluster's queue. Raises SubmissionRefused as create_run would."""
    check_submission(user, team)
    return {"dry_run": True, "config": config.model_dump(), "team": team.slug,
            "experiment": experiment_name.strip(), "queue_position": queue.would_be_position(team, config)}


def request_resume(run: Run) -> bool:
    """Resume a failed or cancelled ``run``: a new attempt (its own Ray job) is queued and
    continues after the run's latest checkpoint (from the start when it has none); the
    iterations after the checkpoint run again and their metric points replace the old ones.

    Returns False (and changes nothing) when the run is not failed or cancelled. Raises
    SubmissionRefused (nothing changed) when its team already has the most runs waiting
    (``UMBRA_TEAM_MAX_QUEUED``; a resume is no new submission, so the per-user rate does
    not count it).
    """
    with transaction.atomic():
        locked = Run.objects.select_for_update().select_related("experiment__team").get(pk=run.pk)
        if locked.state not in RESUMABLE:
            return False
        Team.objects.select_for_update().filter(pk=locked.experiment.team_id).first()
        check_team_queue(locked.experiment.team)
        locked.attempt += 1
        locked.ray_job_id, locked.finished_at = "", None
        locked.queued_at = timezone.now()  # the attempt joins the end of its team's line
        # The earlier attempt's token must not write into this attempt's history.
        revoke_ingest_token(locked, save=False)
        locked.save(update_fields=["attempt", "ray_job_id", "finished_at", "queued_at", "ingest_token_hash",
                                   "ingest_token_expires_at"])
        transition(run.pk, Run.State.QUEUED, f"resume requested: attempt {locked.attempt} continues from "
                                             "the latest checkpoint")
        transaction.on_commit(request_pump)
    return True


def request_cancel(run: Run) -> None:
    """Cancel ``run``: a queued run is cancelled at once and never starts (the queue
    dispatches only runs still queued); a dispatched one gets its Ray job stopped by a
    Celery task (the follow task records ``cancelled``)."""
    with transaction.atomic():  # the state now, not the caller's copy: the pump may just have taken it
        state = Run.objects.select_for_update().values_list("state", flat=True).get(pk=run.pk)
        if state == Run.State.QUEUED:
            transition(run.pk, Run.State.CANCELLED, "cancelled before dispatch")
            return
    if state not in Run.TERMINAL:
        cancel_run.delay(run.pk)
