"""Guards on every request under ``/api/``."""
from __future__ import annotations

from django.http import JsonResponse


class RefuseEmptyQueryValues:
    """400 for an empty query value under ``/api/`` (``?page=``, ``?created_after=``): it is no
    number, date or name, and taking it as "not given" would hide a client's mistake."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path.startswith("/api/"):
            empty = sorted({name for name, values in request.GET.lists() if any(v == "" for v in values)})
            if empty:
                return JsonResponse({name: ["must not be empty: give a value or leave the parameter out"]
                                     for name in empty}, status=400)
        return self.get_response(request)
