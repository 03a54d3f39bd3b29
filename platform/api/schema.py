"""The OpenAPI schema (drf-spectacular) made to say what the server enforces: every error
an operation can answer, and the characters and lengths its text inputs accept."""
from __future__ import annotations

import django_filters
from django.core.validators import RegexValidator
from drf_spectacular.contrib.django_filters import DjangoFilterExtension
from drf_spectacular.openapi import AutoSchema
from rest_framework import serializers
from rest_framework.permissions import SAFE_METHODS

from api import text
from api.errors import error
from runs.validators import printable_name


class ApiAutoSchema(AutoSchema):
    """drf-spectacular's AutoSchema plus the errors common to every endpoint of their kind:
    400 where there is input, 401/403 where a user must be signed in (403: unsafe methods),
    404 where the path names an object or a page, 415 where there is a body, 429 when
    throttled. An endpoint's own errors (409, 503, ...) are declared on its view."""

    def get_operation(self, path, path_regex, path_prefix, method, registry):
        operation = super().get_operation(path, path_regex, path_prefix, method, registry)
        if operation is None:
            return None
        responses = operation["responses"]
        for status, meaning in self._common_errors(operation):
            responses.setdefault(str(status), self._get_response_for_code(error(status, meaning), str(status)))
        operation["responses"] = dict(sorted(responses.items()))
        return operation

    def _common_errors(self, operation: dict) -> list[tuple[int, str | None]]:
        security = operation.get("security", [])
        if any("ingestToken" in s for s in security):
            return []  # the Ray job's ingestion is no DRF endpoint: it declares its own answers
        where = {p["in"] for p in operation.get("parameters", [])}
        body = "requestBody" in operation
        signed_in = bool(security) and {} not in security
        paginated = self.method == "GET" and self._is_list_view() and self._get_paginator() is not None
        not_found = None if "path" in where else "`Invalid page.`: a page past the last one"
        return [(status, meaning) for status, meaning, applies in (
            (400, None, body or "query" in where),
            (401, None, signed_in),
            (403, None, signed_in and self.method not in SAFE_METHODS),
            (404, not_found, "path" in where or paginated),
            (415, None, body),
            (429, None, bool(self.view.get_throttles())),
        ) if applies]

    def _map_serializer_field(self, field, direction, bypass_extensions=False):
        schema = super()._map_serializer_field(field, direction, bypass_extensions)
        if (direction == "request" and isinstance(field, serializers.CharField)
                and schema.get("type") == "string" and not {"pattern", "format", "enum"} & schema.keys()
                and not any(isinstance(v, RegexValidator) for v in field.validators)):  # e.g. a slug's own
            refused = text.CONTROL if printable_name in field.validators else text.NUL
            schema["pattern"] = text.pattern(refused, non_blank=not field.allow_blank and field.trim_whitespace)
        return schema


class FilterParameters(DjangoFilterExtension):
    """django-filter's query parameters plus what a text filter's form field enforces: at
    most ``max_length`` characters, no NUL; an empty value is refused (api.middleware)."""

    priority = 1

    def resolve_filter_field(self, auto_schema, model, filterset_class, field_name, filter_field):
        parameters = super().resolve_filter_field(auto_schema, model, filterset_class, field_name, filter_field)
        if isinstance(filter_field, django_filters.CharFilter):
            for parameter in parameters:
                parameter["schema"].update(minLength=1, pattern=text.pattern(text.NUL, non_blank=False))
                if filter_field.extra.get("max_length"):
                    parameter["schema"]["maxLength"] = filter_field.extra["max_length"]
        return parameters
