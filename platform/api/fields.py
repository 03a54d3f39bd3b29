"""Serializer fields of the API's JSON input."""
from __future__ import annotations

from rest_framework import serializers


class _StrictText:
    """Text only: DRF's CharField also takes a number (5 becomes "5"), which the schema,
    saying ``string``, refuses."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class Text(_StrictText, serializers.CharField):
    pass


class Slug(_StrictText, serializers.SlugField):
    pass
