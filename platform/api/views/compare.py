"""``/api/compare/`` and its CSV exports: runs of any teams the user may see, side by side."""
from __future__ import annotations

import csv
import io

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.exceptions import NotFound, ParseError
from rest_framework.response import Response
from rest_framework.views import APIView

from api.errors import error
from api.serializers import CompareQuerySerializer
from compare.services import build_comparison
from compare.summary import COLUMNS


def _comparison(request) -> dict:
    params = request.query_params.dict()
    if len(request.query_params.getlist("runs")) > 1:  # runs=1&runs=2 means runs=1,2, as on the page
        params["runs"] = ",".join(request.query_params.getlist("runs"))
    q = CompareQuerySerializer(data=params)
    q.is_valid(raise_exception=True)
    v = q.validated_data
    if v.get("reference") is not None and v["reference"] not in v["runs"]:  # names no run of this comparison
        raise NotFound("reference must be one of the compared runs")
    try:
        return build_comparison(request.user, v["runs"], v.get("metrics"), x=v["x"], max_points=v["max_points"],
                                reference=v.get("reference"))
    except ValueError as exc:
        raise ParseError(str(exc)) from None


def _cell(value):
    """A CSV cell that a spreadsheet will not run: text starting like a formula gets a quote."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


def _csv(rows: list[list], filename: str) -> HttpResponse:
    buf = io.StringIO()
    csv.writer(buf).writerows([[_cell(v) for v in row] for row in rows])
    resp = HttpResponse(buf.getvalue(), content_type="text/csv; charset=utf-8")
    resp["Content-Disposition"] = f'attachment; filename="{filename}"'
    return resp


_ERRORS = {404: error(404, "a run id names no run the user may see, or `reference` is not among `runs`"),
           503: error(503)}


class CompareView(APIView):
    @extend_schema(parameters=[CompareQuerySerializer], responses={200: OpenApiTypes.OBJECT, **_ERRORS})
    def get(self, request):
        """Summary table with ratios to the reference run, config diff and overlaid,
        downsampled series of the requested metrics (shape: docs/api.md, Compare)."""
        return Response(_comparison(request))


class CompareSummaryCsvView(APIView):
    @extend_schema(parameters=[CompareQuerySerializer],
                   responses={(200, "text/csv"): OpenApiResponse(OpenApiTypes.STR), **_ERRORS})
    def get(self, request):
        """The summary table as CSV: one row per run, each column with its ratio."""
        doc = _comparison(request)
        header = ["run", "team", "experiment", "policy", "state", "reference"]
        for column in COLUMNS:
            header += [column, f"{column}_ratio"]
        rows = [header]
        for r in doc["runs"]:
            row = [r["id"], r["team"], r["experiment"], r["policy"], r["state"], "yes" if r["id"] == doc["reference"] else ""]
            for column in COLUMNS:
                row += [r["summary"][column], r["ratios"][column]]
            rows.append(["" if v is None else v for v in row])
        return _csv(rows, "umbra-compare-summary.csv")


class CompareSeriesCsvView(APIView):
    @extend_schema(parameters=[CompareQuerySerializer],
                   responses={(200, "text/csv"): OpenApiResponse(OpenApiTypes.STR), **_ERRORS})
    def get(self, request):
        """The downsampled series as CSV rows ``run,metric,x,y``."""
        doc = _comparison(request)
        rows: list[list] = [["run", "metric", doc["x"], "y"]]
        for metric, by_run in doc["series"].items():
            for run_id, s in by_run.items():
                rows += [[run_id, metric, x, y] for x, y in zip(s["x"], s["y"])]
        return _csv(rows, "umbra-compare-series.csv")
