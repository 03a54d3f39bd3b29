"""The API's error bodies (docs/api.md, Errors) and what each error status means, declared
once: ``api.schema`` adds them to every operation that can answer them, views add their own."""
from __future__ import annotations

from drf_spectacular.extensions import OpenApiSerializerExtension
from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers, status
from rest_framework.exceptions import APIException


class Conflict(APIException):
    """409: a well-formed request that the object's current state refuses."""

    status_code = status.HTTP_409_CONFLICT
    default_detail = "conflicts with the current state"
    default_code = "conflict"


class ErrorSerializer(serializers.Serializer):
    """``{"detail": "message"}``."""

    detail = serializers.CharField()


class InputErrorSerializer(serializers.Serializer):
    """Invalid input: ``{"detail": "message"}``, or field errors ``{"field": ["message", ...]}``
    (``non_field_errors`` for the body as a whole; nested for list items and ``config``)."""


class _InputErrorSchema(OpenApiSerializerExtension):
    """Field errors have no fixed field names: an object whose values are messages."""

    target_class = InputErrorSerializer

    def map_serializer(self, auto_schema, direction):
        return {"type": "object", "description": InputErrorSerializer.__doc__.strip(),
                "additionalProperties": {"anyOf": [
                    {"type": "string"}, {"type": "array", "items": {"type": "string"}}, {"type": "object"}]}}


_MEANING = {
    400: "invalid input, the fields named",
    401: "no or an unknown token: send `Authorization: Token <token>` (POST /api/auth/token/)",
    403: "the user's role does not allow it (or a session request without its CSRF token)",
    404: "no such object, or not visible to the user",
    409: "conflicts with the object's current state",
    415: "the body is not JSON (`Content-Type: application/json`)",
    429: "too many requests: try again later (`Retry-After`, where known)",
    503: "the query ran past its time limit: ask for less",
}


def error(status: int, meaning: str | None = None) -> OpenApiResponse:
    """The documented answer ``status`` with its body; ``meaning`` says when an endpoint gives it."""
    body = InputErrorSerializer if status == 400 else ErrorSerializer
    return OpenApiResponse(body, description=meaning or _MEANING[status])
