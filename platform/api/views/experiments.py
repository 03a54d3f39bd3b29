"""``/api/experiments/``: visible experiments; members create and edit their team's."""
from __future__ import annotations

from django.db.models import Count
import django_filters
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.utils import extend_schema
from rest_framework import generics, status
from rest_framework.exceptions import PermissionDenied
from rest_framework.response import Response

from api.errors import Conflict, error
from api.serializers import ExperimentCreateSerializer, ExperimentSerializer
from runs.models import Experiment
from runs.selectors import experiment_for, visible_experiments
from runs.services import ExperimentNameTaken, create_experiment, update_experiment
from teams.selectors import membership, team_for_member


def _with_counts(qs):
    return qs.annotate(run_count=Count("runs")).order_by("-created_at", "-pk")


class ExperimentFilter(django_filters.FilterSet):
    """``team`` (slug) and ``visibility``."""

    team = django_filters.CharFilter(field_name="team__slug", max_length=100)
    visibility = django_filters.ChoiceFilter(choices=Experiment.Visibility.choices)

    class Meta:
        model = Experiment
        fields: list[str] = []


class ExperimentListView(generics.ListAPIView):
    serializer_class = ExperimentSerializer
    filter_backends = [DjangoFilterBackend]
    filterset_class = ExperimentFilter

    def get_queryset(self):
        return _with_counts(visible_experiments(self.request.user))

    def get(self, request, *args, **kwargs):
        """Experiments the user may see, newest first."""
        return super().get(request, *args, **kwargs)

    @extend_schema(request=ExperimentCreateSerializer, responses={
        201: ExperimentSerializer, 404: error(404, "no such team, or the user is not in it"),
        409: error(409, "the team already has an experiment of that name")})
    def post(self, request):
        """Create an experiment in one of the user's teams (members and admins)."""
        data = ExperimentCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        team, member = team_for_member(request.user, v["team"])
        if not member.can_submit():
            raise PermissionDenied("viewers cannot create experiments")
        try:
            exp = create_experiment(team, v["name"], v["description"], v["tags"], v["visibility"])
        except ExperimentNameTaken as exc:
            raise Conflict(str(exc)) from None
        return Response(ExperimentSerializer(_with_counts(Experiment.objects.filter(pk=exp.pk)).get()).data,
                        status=status.HTTP_201_CREATED)


class ExperimentDetailView(generics.GenericAPIView):
    serializer_class = ExperimentSerializer

    def get_object(self):
        exp = experiment_for(self.request.user, self.kwargs["pk"])
        return _with_counts(Experiment.objects.filter(pk=exp.pk)).get()

    def get(self, request, pk: int):
        """One visible experiment."""
        return Response(self.get_serializer(self.get_object()).data)

    def patch(self, request, pk: int):
        """Change description, tags or visibility (members and admins of its team)."""
        exp = self.get_object()
        member = membership(request.user, exp.team)
        if member is None or not member.can_submit():
            raise PermissionDenied("only members of the experiment's team edit it")
        data = self.get_serializer(exp, data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        update_experiment(exp, **data.validated_data)
        return Response(self.get_serializer(self.get_object()).data)
