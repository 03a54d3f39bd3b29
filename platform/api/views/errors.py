"""JSON answers for ``/api/`` paths that reach no endpoint, and for server errors there."""
from __future__ import annotations

from django.http import JsonResponse
from django.urls import Resolver404, resolve
from django.views import defaults
from rest_framework.exceptions import NotFound
from rest_framework.permissions import AllowAny
from rest_framework.views import APIView


class NotFoundView(APIView):
    """The last ``/api/`` route: a JSON 404 for any path no endpoint matches, whatever the
    method (also with DEBUG, whose HTML route list would otherwise answer); it names the
    endpoint a missing trailing slash would reach."""

    authentication_classes: list = []  # the same 404 for everyone: nothing to sign in to
    permission_classes = [AllowAny]
    schema = None  # no endpoint of the schema

    def http_method_not_allowed(self, request, *args, **kwargs):
        raise NotFound(self._message(request))

    options = http_method_not_allowed

    @staticmethod
    def _message(request) -> str:
        if not request.path.endswith("/"):
            try:
                if getattr(resolve(request.path + "/").func, "cls", None) is not NotFoundView:
                    return f"no such API endpoint: did you mean {request.path}/ ?"
            except Resolver404:
                pass
        return "no such API endpoint: the API is described at /api/docs/"


def server_error(request):
    """``handler500``: JSON under ``/api/`` (clients parse it), Django's page elsewhere."""
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "server error"}, status=500)
    return defaults.server_error(request)
