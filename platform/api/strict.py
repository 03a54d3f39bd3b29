"""Request bodies that refuse keys they do not know (``{"tags": [...]}`` on a run
submission is a client's mistake, not something to drop silently), and say so in the
schema (``additionalProperties: false``)."""
from __future__ import annotations

from drf_spectacular.extensions import OpenApiSerializerExtension
from rest_framework import serializers


class StrictSerializer(serializers.Serializer):
    """A serializer whose input may hold only its own fields (400 names the others)."""

    def to_internal_value(self, data):
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError({k: ["unknown field"] for k in unknown})
        return super().to_internal_value(data)


class _StrictSchema(OpenApiSerializerExtension):
    target_class = StrictSerializer
    match_subclasses = True

    def map_serializer(self, auto_schema, direction):
        schema = auto_schema._map_serializer(self.target, direction, bypass_extensions=True)
        if direction == "request":
            schema["additionalProperties"] = False
        return schema
