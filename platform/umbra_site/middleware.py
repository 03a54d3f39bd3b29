"""Request guards that apply to every page and endpoint."""
from __future__ import annotations

from django.http import JsonResponse


class RejectNulBytes:
    """Answer 400 to a path or query parameter holding a NUL character: nothing may
    carry one into the database (PostgreSQL text cannot hold it)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if "\x00" in request.path or any("\x00" in k or "\x00" in v for k, vs in request.GET.lists() for v in vs):
            return JsonResponse({"detail": "NUL characters are not allowed in URLs"}, status=400)
        return self.get_response(request)
