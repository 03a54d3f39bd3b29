"""``/api/runs/``: list with filters, create from a config, detail, cancel, events, log."""
from __future__ import annotations

from django.db.models import Count, IntegerField, OuterRef, Subquery, Value
from django.db.models.functions import Coalesce
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, status
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from api.errors import error
from api.serializers import (DryRunSerializer, EventSerializer, LogSerializer, RunCreateSerializer, RunLabelsSerializer,
                             RunSerializer)
from runs.config_check import check_config
from runs.filters import RunFilter
from runs.labels import LABEL_FIELDS, update_labels
from runs.models import Run
from runs.selectors import can_act_on, run_for, visible_runs
from runs.services import SubmissionRefused, create_run, preview_run, request_cancel, request_resume
from teams.selectors import team_for_member
from telemetry.models import MetricPoint

ITERATION_METRIC = "iteration/time_s"
_YES, _NO = ("1", "true", "yes"), ("0", "false", "no")


def _dry_run(request) -> bool:
    """The ``dry_run`` query parameter, given at most once, exactly one of the schema's
    values (absent = no); 400 otherwise: a submission the client meant as a dry run must
    never be stored because of a typo."""
    unknown = sorted(set(request.query_params) - {"dry_run"})
    if unknown:  # e.g. ?dryrun=1 or ?DRY_RUN=1: meant as a dry run, it would store a run
        raise ValidationError({name: ["unknown query parameter: a submission takes only dry_run"] for name in unknown})
    given = request.query_params.getlist("dry_run")
    if not given:
        return False
    if len(given) > 1 or given[0] not in _YES + _NO:
        raise ValidationError({"dry_run": [f"give it once, as one of {', '.join(_YES + _NO)}"]})
    return given[0] in _YES


def _refused(exc: SubmissionRefused) -> Response:
    """429 with the limit's message; Retry-After where it is known."""
    headers = {"Retry-After": str(exc.retry_after_s)} if exc.retry_after_s else None
    return Response({"detail": str(exc)}, status=status.HTTP_429_TOO_MANY_REQUESTS, headers=headers)


def with_progress(qs):
    """Annotate ``iterations_done`` (points of ``iteration/time_s``) on a run queryset."""
    done = MetricPoint.objects.filter(run=OuterRef("pk"), name=ITERATION_METRIC).order_by().values("run") \
        .annotate(c=Count("*")).values("c")
    return qs.annotate(iterations_done=Coalesce(Subquery(done, output_field=IntegerField()), Value(0)))


def _visible_run(request, pk: int) -> Run:
    run = run_for(request.user, pk)
    return with_progress(Run.objects.filter(pk=run.pk).select_related("experiment__team", "created_by")).get()


class RunListView(generics.ListAPIView):
    serializer_class = RunSerializer
    filter_backends = [DjangoFilterBackend]
    filterset_class = RunFilter

    def get_queryset(self):
        return with_progress(visible_runs(self.request.user)).order_by("-created_at", "-pk")

    def get(self, request, *args, **kwargs):
        """Runs the user may see, newest first, filtered by the query parameters."""
        return super().get(request, *args, **kwargs)

    @extend_schema(
        request=RunCreateSerializer,
        parameters=[OpenApiParameter("dry_run", {"type": "string", "enum": list(_YES + _NO)},
                                     description="1 (or true, yes): validate only, store nothing")],
        responses={201: RunSerializer, 200: DryRunSerializer,
                   404: error(404, "no such team, or the user is not in it"),
                   429: error(429, "the team has its most runs waiting, or the user submitted too many "
                                   "runs lately (`Retry-After` says when to try again)")})
    def post(self, request):
        """Submit a run of ``config`` to the team's experiment (created if new); members and admins.
        It waits in the queue until its cluster can hold it. With ``?dry_run=1`` only validate:
        200 with the normalised config and the queue position it would take, nothing stored.
        429 past the team's queue limit or the user's submission rate."""
        dry_run = _dry_run(request)
        data = RunCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        team, member = team_for_member(request.user, v["team"])
        if not member.can_submit():
            raise PermissionDenied("viewers cannot submit runs")
        config, errors = check_config(v["config"], strict=True, team=team.slug)
        if errors:
            raise ValidationError({"config": errors})
        try:
            if dry_run:
                return Response(preview_run(request.user, team, v["experiment"], config))
            run = create_run(request.user, team, v["experiment"], config)
        except SubmissionRefused as exc:
            return _refused(exc)
        return Response(RunSerializer(_visible_run(request, run.pk)).data, status=status.HTTP_201_CREATED)


class RunDetailView(APIView):
    @extend_schema(responses=RunSerializer)
    def get(self, request, pk: int):
        """One run the user may see (404 otherwise)."""
        return Response(RunSerializer(_visible_run(request, pk)).data)

    @extend_schema(request=RunLabelsSerializer, responses=RunSerializer)
    def patch(self, request, pk: int):
        """Set the run's name, its own tags or its note (members and admins of its team)."""
        run = run_for(request.user, pk)
        if not can_act_on(request.user, run):
            raise PermissionDenied("only members of the run's team label it")
        data = RunLabelsSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            update_labels(run, dict(data.validated_data))
        except ValueError as exc:
            field = str(exc).split(":")[0]
            raise ValidationError({field if field in LABEL_FIELDS else "non_field_errors": [str(exc)]}) from None
        return Response(RunSerializer(_visible_run(request, pk)).data)


class RunCancelView(APIView):
    @extend_schema(request=None, responses={202: RunSerializer, 409: error(409, "the run has already ended")})
    def post(self, request, pk: int):
        """Request cancellation (members and admins of the run's team); 409 if it has ended."""
        run = run_for(request.user, pk)
        if not can_act_on(request.user, run):
            raise PermissionDenied("only members of the run's team cancel it")
        if run.is_terminal:
            return Response({"detail": f"run has already ended ({run.state})"}, status=status.HTTP_409_CONFLICT)
        request_cancel(run)
        return Response(RunSerializer(_visible_run(request, pk)).data, status=status.HTTP_202_ACCEPTED)


class RunResumeView(APIView):
    @extend_schema(request=None, responses={
        202: RunSerializer, 409: error(409, "only a failed or cancelled run resumes"),
        429: error(429, "the team already has the most runs waiting in the queue (`UMBRA_TEAM_MAX_QUEUED`)")})
    def post(self, request, pk: int):
        """Resume a failed or cancelled run from its latest checkpoint as a new attempt
        (members and admins of the run's team); 409 for a run in any other state, 429 when
        its team has the most runs waiting."""
        run = run_for(request.user, pk)
        if not can_act_on(request.user, run):
            raise PermissionDenied("only members of the run's team resume it")
        try:
            resumed = request_resume(run)
        except SubmissionRefused as exc:
            return _refused(exc)
        if not resumed:
            return Response({"detail": f"only failed or cancelled runs resume; this one is {run.state}"},
                            status=status.HTTP_409_CONFLICT)
        return Response(RunSerializer(_visible_run(request, pk)).data, status=status.HTTP_202_ACCEPTED)


class RunEventsView(APIView):
    @extend_schema(responses=EventSerializer(many=True))
    def get(self, request, pk: int):
        """The run's event log, oldest first: state transitions and the job's notes."""
        run = run_for(request.user, pk)
        return Response(EventSerializer(run.events.all(), many=True).data)


class RunLogsView(APIView):
    @extend_schema(responses=LogSerializer)
    def get(self, request, pk: int):
        """The tail of the run's Ray job log."""
        return Response({"log_tail": run_for(request.user, pk).log_tail})
