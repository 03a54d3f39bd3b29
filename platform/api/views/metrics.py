"""``/api/runs/{id}/metrics/``: GET downsampled series for users; POST is the Ray
job's ingestion (authenticated by the run's bearer token, not a user)."""
from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from api.errors import error
from api.serializers import SeriesQuerySerializer
from runs.selectors import run_for
from telemetry.series import metric_names, series_of
from telemetry.views import ingest_metrics

_XY = inline_serializer("XY", {"x": serializers.ListField(child=serializers.FloatField()),
                               "y": serializers.ListField(child=serializers.FloatField())})


DEFAULT_SERIES = 50  # series sent when no names are asked for (a run may have up to 3,000 names)

_INGESTED = inline_serializer("Ingested", {"stored": serializers.BooleanField(), "seq": serializers.IntegerField()})


class RunMetricsView(APIView):
    def initialize_request(self, request, *args, **kwargs):
        self._ingesting = request.method == "POST"
        return super().initialize_request(request, *args, **kwargs)

    def get_authenticators(self):
        if getattr(self, "_ingesting", False):
            return []  # a Ray job, not a user: no session (nor its CSRF check), only the run's token
        return super().get_authenticators()

    def get_permissions(self):
        if self.request.method == "POST":
            return [AllowAny()]  # the per-run ingestion token is checked by the ingestion view
        return super().get_permissions()

    @extend_schema(parameters=[SeriesQuerySerializer], responses={200: inline_serializer("RunSeries", {
        "run": serializers.IntegerField(), "x": serializers.CharField(),
        "names": serializers.ListField(child=serializers.CharField(),
                                       help_text="every metric name the run has, in name order"),
        "series": serializers.DictField(child=_XY)}), 503: error(503)})
    def get(self, request, pk: int):
        """Metric series of a visible run, each downsampled to at most ``max_points``
        with min/max buckets; ``x`` is step (iteration), wall (Unix s) or relative (s).
        Without ``names``, the first 50 names in name order; ``names`` in the answer lists all."""
        run = run_for(request.user, pk)
        q = SeriesQuerySerializer(data=request.query_params)
        q.is_valid(raise_exception=True)
        every = metric_names([run.pk])
        names = q.validated_data.get("names") or every[:DEFAULT_SERIES]
        series = series_of([run.pk], names, x=q.validated_data["x"], max_points=q.validated_data["max_points"])
        return Response({"run": run.pk, "x": q.validated_data["x"], "names": every,
                         "series": {name: by_run[run.pk] for name, by_run in series.items()}})

    @extend_schema(
        auth=[{"ingestToken": []}],
        request=inline_serializer("MetricBatch", {  # in full: umbra.telemetry.wire.BatchIn (strict, no extra keys)
            "seq": serializers.IntegerField(min_value=1, max_value=2**31 - 1),
            "points": serializers.ListField(child=serializers.DictField()),
            "trace": serializers.DictField(required=False, allow_null=True),
            "events": serializers.ListField(child=serializers.CharField(max_length=1000), required=False)}),
        responses={201: _INGESTED, 200: OpenApiResponse(_INGESTED, description="a batch already stored (same seq)"),
                   400: error(400, "a malformed or too large batch"),
                   404: error(404, "no such run, or the token is not its valid ingestion token (alike: "
                                   "a run is not revealed to whoever lacks its token)")})
    def post(self, request, pk: int):
        """Ingest one metric batch from the run's Ray job (see ``umbra.telemetry.wire.BatchIn``)."""
        return ingest_metrics(request._request, pk)
