"""REST representations of teams, experiments, runs, events and query parameters."""
from __future__ import annotations

from rest_framework import serializers

from runs.models import Experiment, Run, RunEvent
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
    username = serializers.CharField(max_length=150)
    role = serializers.ChoiceField(choices=Membership.Role.choices, default=Membership.Role.MEMBER)


class ExperimentSerializer(serializers.ModelSerializer):
    team = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    runs = serializers.IntegerField(source="run_count", read_only=True)
    tags = serializers.ListField(child=serializers.CharField(max_length=50, validators=[printable_name]),
                                 max_length=20, required=False)

    class Meta:
        model = Experiment
        fields = ["id", "team", "name", "description", "tags", "visibility", "created_at", "runs"]
        read_only_fields = ["id", "team", "name", "created_at", "runs"]


class ExperimentCreateSerializer(serializers.Serializer):
    team = serializers.SlugField(max_length=100)
    name = serializers.CharField(max_length=200, validators=[printable_name])
    description = serializers.CharField(max_length=5000, required=False, allow_blank=True, default="")
    tags = serializers.ListField(child=serializers.CharField(max_length=50, validators=[printable_name]),
                                 max_length=20, required=False, default=list)
    visibility = serializers.ChoiceField(choices=Experiment.Visibility.choices, default=Experiment.Visibility.TEAM)

    def validate_name(self, value: str) -> str:
        if not value.strip():
            raise serializers.ValidationError("must not be blank")
        return value.strip()


class RunSerializer(serializers.ModelSerializer):
    team = serializers.CharField(source="experiment.team.slug")
    experiment = serializers.CharField(source="experiment.name")
    experiment_id = serializers.IntegerField()
    tags = serializers.ListField(source="experiment.tags", child=serializers.CharField())
    policy = serializers.SerializerMethodField()
    model = serializers.SerializerMethodField()
    created_by = serializers.CharField(source="created_by.username", default=None)
    iterations_done = serializers.IntegerField()
    iterations_total = serializers.SerializerMethodField()
    url = serializers.SerializerMethodField()

    class Meta:
        model = Run
        fields = ["id", "team", "experiment", "experiment_id", "tags", "state", "policy", "model", "config",
                  "created_by", "created_at", "started_at", "finished_at", "iterations_done", "iterations_total",
                  "url"]

    def get_policy(self, run: Run) -> str | None:
        return run.config.get("rollout_policy")

    def get_model(self, run: Run) -> str | None:
        return run.config.get("model")

    def get_iterations_total(self, run: Run) -> int | None:
        return run.config.get("iterations")

    def get_url(self, run: Run) -> str:
        return f"/runs/{run.pk}/"


class RunCreateSerializer(serializers.Serializer):
    team = serializers.SlugField(max_length=100)
    experiment = serializers.CharField(max_length=200, validators=[printable_name])
    config = serializers.DictField(help_text="RunConfig fields; missing ones take their defaults")

    def validate_experiment(self, value: str) -> str:
        if not value.strip():
            raise serializers.ValidationError("must not be blank")
        return value.strip()


class EventSerializer(serializers.ModelSerializer):
    class Meta:
        model = RunEvent
        fields = ["kind", "from_state", "to_state", "reason", "at"]


class LogSerializer(serializers.Serializer):
    log_tail = serializers.CharField()


def _int_list(value: str, what: str) -> list[int]:
    parts = [v.strip() for v in value.split(",") if v.strip()]
    if not all(p.isascii() and p.isdigit() and len(p) < 19 for p in parts):
        raise serializers.ValidationError(f"{what} must be comma-separated integers")
    ids = [int(p) for p in parts]
    if any(not 0 < i < 2**63 for i in ids):
        raise serializers.ValidationError(f"{what} must be positive")
    return ids


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
    runs = serializers.CharField(max_length=1000, help_text="comma-separated run ids (1 to 50)")
    metrics = serializers.CharField(required=False, max_length=4000, help_text="comma-separated metric names")
    x = serializers.ChoiceField(choices=X_AXES, default="step")
    max_points = serializers.IntegerField(min_value=2, max_value=MAX_POINTS_LIMIT, default=1500)
    reference = serializers.IntegerField(required=False, min_value=1, max_value=2**63 - 1)

    def validate_runs(self, value: str) -> list[int]:
        ids = _int_list(value, "runs")
        if not 1 <= len(ids) <= 50:
            raise serializers.ValidationError("give between 1 and 50 run ids")
        return ids

    def validate_metrics(self, value: str) -> list[str]:
        names = [n.strip() for n in value.split(",") if n.strip()]
        if len(names) > 20:
            raise serializers.ValidationError("at most 20 metrics")
        return names
