"""REST representations of teams, experiments, runs, events and query parameters."""
from __future__ import annotations

from django.core.validators import RegexValidator
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from api.fields import Slug, Text, _StrictText
from api.run_config import run_config_schema
from api.strict import StrictSerializer

from runs.labels import TAG_PATTERN
from runs.models import Experiment, Run, RunEvent
from runs.queue import positions as queue_positions
from runs.validators import printable_name
from teams.models import Membership
from telemetry.series import MAX_POINTS_LIMIT, X_AXES


class TeamSerializer(serializers.Serializer):
    slug = serializers.SlugField()
    name = serializers.CharField()
    role = serializers.ChoiceField(choices=Membership.Role.choices)


class MeSerializer(serializers.Serializer):
    username = serializers.CharField()
    teams = TeamSerializer(many=True)


class MemberSerializer(serializers.Serializer):
    username = Text(max_length=150)
    role = serializers.ChoiceField(choices=Membership.Role.choices, default=Membership.Role.MEMBER)


class ExperimentSerializer(serializers.ModelSerializer):
    team = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    runs = serializers.IntegerField(source="run_count", read_only=True)
    description = Text(max_length=5000, required=False, allow_blank=True)
    tags = serializers.ListField(child=Text(max_length=50, validators=[printable_name]), max_length=20, required=False)

    class Meta:
        model = Experiment
        fields = ["id", "team", "name", "description", "tags", "visibility", "created_at", "runs"]
        read_only_fields = ["id", "team", "name", "created_at", "runs"]


class ExperimentCreateSerializer(StrictSerializer):
    """A new experiment of ``team``; tags, description and visibility can be changed later (PATCH)."""

    team = Slug(max_length=100)
    name = Text(max_length=200, validators=[printable_name])
    description = Text(max_length=5000, required=False, allow_blank=True, default="")
    tags = serializers.ListField(child=Text(max_length=50, validators=[printable_name]), max_length=20,
                                 required=False, default=list)
    visibility = serializers.ChoiceField(choices=Experiment.Visibility.choices, default=Experiment.Visibility.TEAM)

    def validate_name(self, value: str) -> str:
        if not value.strip():
            raise serializers.ValidationError("must not be blank")
        return value.strip()


class RunSerializer(serializers.ModelSerializer):
    team = serializers.CharField(source="experiment.team.slug")
    experiment = serializers.CharField(source="experiment.name")
    experiment_id = serializers.IntegerField()
    tags = serializers.SerializerMethodField(help_text="the run's own tags, then its experiment's")
    policy = serializers.SerializerMethodField()
    model = serializers.SerializerMethodField()
    created_by = serializers.CharField(source="created_by.username", default=None)
    iterations_done = serializers.IntegerField()
    iterations_total = serializers.SerializerMethodField()
    queue_position = serializers.SerializerMethodField(
        help_text="1-based place among the runs waiting for the same cluster; null unless queued")
    url = serializers.SerializerMethodField()

    class Meta:
        model = Run
        fields = ["id", "name", "note", "team", "experiment", "experiment_id", "tags", "state", "policy", "model", "config",
                  "created_by", "created_at", "started_at", "finished_at", "iterations_done", "iterations_total",
                  "queue_position", "url"]

    def get_queue_position(self, run: Run) -> int | None:
        if run.state != Run.State.QUEUED:
            return None
        if "queue_positions" not in self.context:  # read once per response, shared by a list's runs
            self.context["queue_positions"] = queue_positions()
        return self.context["queue_positions"].get(run.pk)

    def get_tags(self, run: Run) -> list[str]:
        return list(dict.fromkeys([*run.tags, *run.experiment.tags]))

    def get_policy(self, run: Run) -> str | None:
        return run.config.get("rollout_policy")

    def get_model(self, run: Run) -> str | None:
        return run.config.get("model")

    def get_iterations_total(self, run: Run) -> int | None:
        return run.config.get("iterations")

    def get_url(self, run: Run) -> str:
        return f"/runs/{run.pk}/"


class TagText(_StrictText, serializers.RegexField):
    """A tag: a word of letters, digits and ``_ . : + -`` (``runs.labels``)."""

    default_error_messages = {"invalid": "a tag is one word of letters, digits and _ . : + - (no spaces)"}


class RunLabelsSerializer(StrictSerializer):
    """``PATCH /api/runs/ID/``: any of the run's labels (checked by ``runs.labels``)."""

    name = Text(required=False, allow_blank=True, max_length=200, validators=[printable_name])
    tags = serializers.ListField(child=TagText(regex=TAG_PATTERN, max_length=50), required=False, max_length=20,
                                 help_text="the run's own tags (replacing them); the experiment's stay")
    note = Text(required=False, allow_blank=True, max_length=5000)


@extend_schema_field(run_config_schema())
class RunConfigField(serializers.DictField):
    """RunConfig fields (checked by ``runs.config_check``); missing ones take their defaults."""


class RunCreateSerializer(StrictSerializer):
    """A run submission: ``config`` under the team's experiment (created if new). Tags
    belong to the experiment (``PATCH /api/experiments/{id}/``), not to a run."""

    team = Slug(max_length=100)
    experiment = Text(max_length=200, validators=[printable_name])
    config = RunConfigField()

    def validate_experiment(self, value: str) -> str:
        if not value.strip():
            raise serializers.ValidationError("must not be blank")
        return value.strip()


class DryRunSerializer(serializers.Serializer):
    """``POST /api/runs/?dry_run=1``: what the submission would be; nothing is stored."""

    dry_run = serializers.BooleanField()
    config = RunConfigField(help_text="the normalised config: every field, defaults filled in")
    team = serializers.SlugField()
    experiment = serializers.CharField()
    queue_position = serializers.IntegerField(help_text="1-based place the run would take in its cluster's queue")


class EventSerializer(serializers.ModelSerializer):
    class Meta:
        model = RunEvent
        fields = ["kind", "from_state", "to_state", "reason", "at"]


class LogSerializer(serializers.Serializer):
    log_tail = serializers.CharField()


# 1 to 50 run ids (whole numbers from 1, below 2**63), comma-separated: the check and the schema's pattern.
_RUN_IDS = RegexValidator(r"^ *[1-9][0-9]{0,17} *(, *[1-9][0-9]{0,17} *){0,49}$",
                          "give between 1 and 50 run ids as comma-separated integers (from 1)")


class SeriesQuerySerializer(serializers.Serializer):
    names = serializers.CharField(required=False, max_length=4000, help_text="comma-separated metric names")
    x = serializers.ChoiceField(choices=X_AXES, default="step")
    max_points = serializers.IntegerField(min_value=2, max_value=MAX_POINTS_LIMIT, default=1500)

    def validate_names(self, value: str) -> list[str]:
        names = [n.strip() for n in value.split(",") if n.strip()]
        if len(names) > 50:
            raise serializers.ValidationError("at most 50 metric names")
        return names


class CompareQuerySerializer(serializers.Serializer):
    runs = serializers.CharField(max_length=1000, validators=[_RUN_IDS], help_text="comma-separated run ids (1 to 50)")
    metrics = serializers.CharField(required=False, max_length=4000, help_text="comma-separated metric names")
    x = serializers.ChoiceField(choices=X_AXES, default="step")
    max_points = serializers.IntegerField(min_value=2, max_value=MAX_POINTS_LIMIT, default=1500)
    reference = serializers.IntegerField(required=False, min_value=1, max_value=2**63 - 1)

    def validate_runs(self, value: str) -> list[int]:
        return [int(part) for part in value.split(",")]

    def validate_metrics(self, value: str) -> list[str]:
        names = [n.strip() for n in value.split(",") if n.strip()]
        if len(names) > 20:
            raise serializers.ValidationError("at most 20 metrics")
        return names
