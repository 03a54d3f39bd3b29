"""API errors as JSON ``{"detail": ...}`` for failures DRF does not map itself."""
from __future__ import annotations

from django.core.exceptions import RequestDataTooBig
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import exception_handler

from telemetry.series import QueryTooSlow


def api_exception_handler(exc, context):
    """DRF's handler, plus: an oversized body is a 400, a query past its timeout a 503."""
    if isinstance(exc, RequestDataTooBig):
        return Response({"detail": "request body too large"}, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, QueryTooSlow):
        return Response({"detail": str(exc)}, status=status.HTTP_503_SERVICE_UNAVAILABLE)
    return exception_handler(exc, context)
