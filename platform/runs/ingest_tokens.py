"""A run's ingestion token, the bearer secret its Ray job posts metric batches with:
issued at dispatch, checked on every batch, its lifetime slid while the run reports.

Only the token's sha256 is stored (``Run.ingest_token_hash``); it is compared in constant
time. A token dies with its run (refused once the run ended) or after
``settings.UMBRA_INGEST_TOKEN_TTL_S`` seconds without a batch, whichever comes first.
"""
from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from runs.models import Run


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _ttl() -> timedelta:
    return timedelta(seconds=settings.UMBRA_INGEST_TOKEN_TTL_S)


def revoke_ingest_token(run: Run, save: bool = True) -> None:
    """Make ``run``'s token invalid at once (a resumed run's earlier attempt must not write
    into the new attempt's history); with ``save=False`` the caller saves the run."""
    run.ingest_token_hash, run.ingest_token_expires_at = "", None
    if save:
        run.save(update_fields=["ingest_token_hash", "ingest_token_expires_at"])


def issue_ingest_token(run: Run) -> str:
    """A fresh ingestion token for ``run`` only (replacing any earlier one), valid for
    ``settings.UMBRA_INGEST_TOKEN_TTL_S`` seconds and while the run is live; only its
    sha256 is stored. Returns the plaintext token (43 URL-safe characters)."""
    token = secrets.token_urlsafe(32)
    run.ingest_token_hash = _digest(token)
    run.ingest_token_expires_at = timezone.now() + _ttl()
    run.save(update_fields=["ingest_token_hash", "ingest_token_expires_at"])
    return token


def ingest_token_ok(run: Run, authorization: str) -> bool:
    """Whether the ``Authorization`` header value is ``Bearer <the run's token>`` (compared in
    constant time), the run is live and the token's lifetime (``ingest_token_expires_at``)
    has not passed."""
    if not authorization.startswith("Bearer ") or not run.ingest_token_hash or run.is_terminal:
        return False
    # A token issued before expiry times were stored (None) lives as long as its run.
    if run.ingest_token_expires_at is not None and run.ingest_token_expires_at <= timezone.now():
        return False
    return hmac.compare_digest(_digest(authorization.removeprefix("Bearer ")), run.ingest_token_hash)


def renew_ingest_token(run: Run) -> None:
    """Slide the token's lifetime while its run sends batches (written at most once per half
    lifetime): a token lapses after UMBRA_INGEST_TOKEN_TTL_S without a batch, never in the
    middle of a long run that keeps reporting."""
    ttl, now = _ttl(), timezone.now()
    if run.ingest_token_expires_at is not None and run.ingest_token_expires_at - now < ttl / 2:
        Run.objects.filter(pk=run.pk).update(ingest_token_expires_at=now + ttl)
