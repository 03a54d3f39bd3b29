"""A run's request traces as a JSONL download (the simulator's ``trace:`` workload)."""
from __future__ import annotations

import json

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.views import APIView

from api.errors import error
from runs.selectors import run_for

_MAX = 2**31 - 1  # iterations are stored as 32-bit integers


class RunTraceView(APIView):
    @extend_schema(parameters=[OpenApiParameter("iteration", {"type": "integer", "minimum": 0, "maximum": _MAX},
                                                description="default: every iteration")],
                   responses={(200, "application/x-ndjson"): OpenApiTypes.STR,
                              404: error(404, "no such run, or no trace for that iteration")})
    def get(self, request, pk: int):
        """One JSON line per request of every stored iteration (or ``?iteration=N``) with the
        set-up it ran on: iteration, policy, instances, capacity, kv_cache_gib, max_tokens,
        group, index, instance, start_s, finish_s, prompt_tokens, output_tokens, finish_reason,
        policy_version, chunks. Import it with ``umbra sim --workload trace:PATH`` or the what-if page."""
        run = run_for(request.user, pk)
        traces = run.traces.order_by("iteration")
        raw = request.query_params.get("iteration")
        if raw is not None:
            if not (raw.isascii() and raw.isdigit() and len(raw) <= 10 and int(raw) <= _MAX):
                raise ValidationError({"iteration": [f"must be a whole number from 0 to {_MAX}"]})
            it = int(raw)
            traces = traces.filter(iteration=it)
            if not traces.exists():
                raise NotFound(f"run #{run.pk} has no trace for iteration {it}")
        cfg = run.config or {}
        lines = []
        for t in traces:
            meta = {"policy": cfg.get("rollout_policy"), "instances": cfg.get("rollout_instances"),
                    "kv_cache_gib": cfg.get("kv_cache_gib"), "max_tokens": cfg.get("max_tokens"), **(t.meta or {})}
            lines.extend(json.dumps({"iteration": t.iteration, **meta, **r}) for r in t.requests)
        resp = HttpResponse("\n".join(lines) + ("\n" if lines else ""), content_type="application/x-ndjson")
        resp["Content-Disposition"] = f'attachment; filename="run-{run.pk}-trace.jsonl"'
        return resp
