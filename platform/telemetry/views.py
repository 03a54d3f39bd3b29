"""The ingestion endpoint the Ray job posts metric batches to."""
from __future__ import annotations

import hashlib
import hmac
from datetime import timedelta

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import JsonResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST
from pydantic import ValidationError

from runs.models import Run
from telemetry.schema import BatchIn
from telemetry.services import ingest


def _error(status: int, message: str) -> JsonResponse:
    return JsonResponse({"detail": message}, status=status)


def _token_ok(run: Run, header: str) -> bool:
    """Bearer token matches the run's (compared in constant time), the run is live and the
    token's lifetime (``ingest_token_expires_at``) has not passed: a token expires with its
    run or after UMBRA_INGEST_TOKEN_TTL_S, whichever comes first."""
    if not header.startswith("Bearer ") or not run.ingest_token_hash or run.is_terminal:
        return False
    # A token issued before expiry times were stored (None) lives as long as its run.
    if run.ingest_token_expires_at is not None and run.ingest_token_expires_at <= timezone.now():
        return False
    digest = hashlib.sha256(header.removeprefix("Bearer ").encode()).hexdigest()
    return hmac.compare_digest(digest, run.ingest_token_hash)


def _renew_token(run: Run) -> None:
    """Slide the token's lifetime while its run sends batches (written at most once per half
    lifetime): a token lapses after UMBRA_INGEST_TOKEN_TTL_S without a batch, never in the
    middle of a long run that keeps reporting."""
    ttl = timedelta(seconds=settings.UMBRA_INGEST_TOKEN_TTL_S)
    now = timezone.now()
    if run.ingest_token_expires_at is not None and run.ingest_token_expires_at - now < ttl / 2:
        Run.objects.filter(pk=run.pk).update(ingest_token_expires_at=now + ttl)


@csrf_exempt
@require_POST
def ingest_metrics(request, run_id: int):
    """POST a metric batch (``telemetry.schema.BatchIn`` JSON) with ``Authorization: Bearer <token>``.

    Answers 201 stored, 200 duplicate, 400 malformed (with a message), 404 for an unknown
    run or a bad or expired token alike (a run is not revealed to whoever lacks its
    token). Nothing is stored unless the whole batch is valid.
    """
    run = Run.objects.filter(pk=run_id).first()
    if run is None or not _token_ok(run, request.headers.get("Authorization", "")):
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
    _renew_token(run)
    return JsonResponse({"stored": stored, "seq": batch.seq}, status=201 if stored else 200)
