"""The ingestion endpoint the Ray job posts metric batches to."""
from __future__ import annotations

from django.core.exceptions import RequestDataTooBig
from django.http import JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST
from pydantic import ValidationError

from runs.ingest_tokens import ingest_token_ok, renew_ingest_token
from runs.models import Run
from umbra.telemetry.wire import BatchIn
from telemetry.services import ingest


def _error(status: int, message: str) -> JsonResponse:
    return JsonResponse({"detail": message}, status=status)


@csrf_exempt
@require_POST
def ingest_metrics(request, run_id: int):
    """POST a metric batch (``umbra.telemetry.wire.BatchIn`` JSON) with ``Authorization: Bearer <token>``.

    Answers 201 stored, 200 duplicate, 400 malformed (with a message), 404 for an unknown
    run or a bad or expired token alike (a run is not revealed to whoever lacks its
    token). Nothing is stored unless the whole batch is valid.
    """
    run = Run.objects.filter(pk=run_id).first()
    if run is None or not ingest_token_ok(run, request.headers.get("Authorization", "")):
        return _error(404, "no such run, or the ingestion token is invalid or expired")
    try:
        body = request.body
    except RequestDataTooBig:
        return _error(400, "metric batch too large")
    try:
        # JSON mode: strict types, arrays accepted as tuples, nesting and sizes bounded by the parser
        batch = BatchIn.model_validate_json(body)
    except ValidationError as exc:
        details = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:10])
        return _error(400, f"malformed metric batch: {details}")
    stored = ingest(run, batch)
    renew_ingest_token(run)
    return JsonResponse({"stored": stored, "seq": batch.seq}, status=201 if stored else 200)
