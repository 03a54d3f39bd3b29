"""``GET /api/runs/ID/model.tar``: the run's latest checkpoint as a Hugging Face model folder
in a streamed tar (``runs.model_export``); ``umbra export`` reads it."""
from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.views import APIView

from api.errors import error
from runs.model_export import model_response
from runs.selectors import run_for


class RunModelView(APIView):
    @extend_schema(responses={(200, "application/x-tar"): OpenApiTypes.BINARY,
                              404: error(404, "no such run, not of your team, or no checkpoint with a model yet")})
    def get(self, request, pk: int):
        """The Hugging Face model folder (config, tokenizer, safetensors) of the run's latest
        checkpoint as a tar archive, streamed; members of the run's team only."""
        return model_response(request.user, run_for(request.user, pk))
