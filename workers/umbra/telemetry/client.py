"""Metric batches from the job to the platform.

Each batch carries a sequence number; the platform stores a batch once even if
a retry delivers it twice. Batches that cannot be delivered are kept and sent
again, in order, before the next one.
"""
from __future__ import annotations

import logging
import math
import time

import requests
from pydantic import ValidationError

from umbra.telemetry.wire import MAX_EVENTS, BatchIn, TraceIn

log = logging.getLogger(__name__)


class BatchInvalid(ValueError):
    """A batch the platform would refuse (the same models check it there): a bug in the job."""


def _errors(exc: ValidationError, limit: int = 10) -> str:
    """``points.3.name: String should match pattern ... (got 'a b')``, for the first ``limit`` errors."""
    parts = []
    for e in exc.errors()[:limit]:
        got = "" if e["type"] == "missing" else repr(e["input"])
        parts.append(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" + (f" (got {got})" if 0 < len(got) <= 80 else ""))
    return "; ".join(parts)


def _tuples(row: dict) -> dict:
    """A trace row with its chunks as tuples, as the model holds them in Python (JSON arrays
    on the wire, which is how the platform reads them)."""
    chunks = row.get("chunks") if isinstance(row, dict) else None
    if isinstance(chunks, list):
        return {**row, "chunks": [tuple(c) if isinstance(c, list) else c for c in chunks]}
    return row


def _trace(step: int, rows: list[dict], meta: dict | None) -> TraceIn:
    """The trace of iteration ``step`` (``meta``: the set-up it ran on). Raises ValidationError."""
    raw = {"iteration": step, "requests": [_tuples(r) for r in rows]}
    if meta is not None:
        raw["meta"] = meta
    return TraceIn.model_validate(raw)


class TelemetryClient:
    """POSTs batches (``umbra.telemetry.wire.BatchIn`` JSON) to ``{base_url}/api/runs/{run_id}/metrics/``.

    With ``base_url`` empty it only logs (standalone runs and benchmarks).
    """

    def __init__(self, base_url: str, run_id: str, token: str, timeout_s: float = 10.0, retries: int = 5,
                 seq_start: int = 0):
        self.url = f"{base_url.rstrip('/')}/api/runs/{run_id}/metrics/" if base_url else ""
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {token}"
        self.timeout_s, self.retries = timeout_s, retries
        self.seq = seq_start  # a resumed run continues after the batches its earlier attempts sent
        self.pending: list[dict] = []

    def send(self, step: int, metrics: dict[str, float], trace: list[dict] | None = None,
             trace_meta: dict | None = None, events: list[str] | None = None) -> bool:
        """Queue one batch (``metrics`` at iteration ``step``; optional per-request
        ``trace`` rows and the set-up they ran on, ``trace_meta``; ``events``: notes for the
        run's event log, e.g. a rollout instance that died) and deliver everything
        pending. Returns True when all got through.

        Raises BatchInvalid (a ValueError, naming the bad fields) when the batch does not fit
        ``umbra.telemetry.wire.BatchIn``, before anything is sent; RuntimeError when the
        platform refuses a batch (4xx): retrying cannot help.
        """
        batch = self.build(self.seq + 1, step, metrics, trace, trace_meta, events)
        self.seq += 1
        self.pending.append(batch.model_dump(mode="json", exclude_unset=True))
        if not self.url:
            log.info("metrics step %s: %s", step, metrics)
            self.pending.clear()
            return True
        return self.flush()

    @staticmethod
    def build(seq: int, step: int, metrics: dict[str, float], trace: list[dict] | None = None,
              trace_meta: dict | None = None, events: list[str] | None = None) -> BatchIn:
        """Batch ``seq`` as the wire model. Non-finite metrics are left out (with a warning),
        notes cut to 1,000 characters; a trace that does not validate is left out with a
        warning and a note in the run's event log (the metrics matter more), anything else
        raises BatchInvalid."""
        finite = {k: float(v) for k, v in metrics.items() if math.isfinite(float(v))}
        for k in metrics.keys() - finite.keys():
            log.warning("metric %s at step %s is not finite; not sent", k, step)
        fields: dict = {}
        notes = list(events or [])
        if trace is not None:
            try:
                fields["trace"] = _trace(step, trace, trace_meta)
            except ValidationError as exc:
                log.warning("trace of iteration %s is malformed, sent without it: %s", step, _errors(exc))
                if len(notes) < MAX_EVENTS:  # a full batch of notes keeps its own
                    notes.append(f"the request trace of iteration {step} is malformed and was not sent: "
                                 f"{_errors(exc)}")
        if notes:
            fields["events"] = [e[:1000] for e in notes]
        points = [{"name": k, "step": step, "value": v} for k, v in finite.items()]
        try:
            return BatchIn.model_validate({"seq": seq, "points": points, **fields})
        except ValidationError as exc:
            raise BatchInvalid(f"metrics batch {seq} (iteration {step}) is malformed: {_errors(exc)}") from None

    def flush(self) -> bool:
        """Deliver pending batches in order; stop at the first that fails for now."""
        while self.pending:
            if not self._post(self.pending[0]):
                return False
            self.pending.pop(0)
        return True

    def _post(self, batch: dict) -> bool:
        for attempt in range(self.retries):
            try:
                resp = self.session.post(self.url, json=batch, timeout=self.timeout_s)
            except requests.RequestException as exc:
                log.warning("metrics batch %s: %s (attempt %d)", batch["seq"], exc, attempt + 1)
            else:
                if resp.status_code < 300:
                    return True
                if resp.status_code == 400 and "trace" in batch:
                    # The metrics matter more than the per-request trace: keep them.
                    log.warning("platform refused the trace of batch %s (%s); resending without it",
                                batch["seq"], resp.text[:200])
                    batch.pop("trace")
                    continue
                if 400 <= resp.status_code < 500:
                    raise RuntimeError(f"platform refused metrics batch {batch['seq']}: "
                                       f"{resp.status_code} {resp.text[:300]}")
                log.warning("metrics batch %s: HTTP %s (attempt %d)", batch["seq"], resp.status_code, attempt + 1)
            time.sleep(min(2 ** attempt * 0.5, 8.0))
        return False
