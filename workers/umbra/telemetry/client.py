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

log = logging.getLogger(__name__)


class TelemetryClient:
    """POSTs ``{"seq", "points", "trace"}`` to ``{base_url}/api/runs/{run_id}/metrics/``.

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

        Raises RuntimeError when the platform refuses a batch (4xx): retrying cannot help.
        """
        self.seq += 1
        finite = {k: float(v) for k, v in metrics.items() if math.isfinite(float(v))}
        for k in metrics.keys() - finite.keys():
            log.warning("metric %s at step %s is not finite; not sent", k, step)
        batch = {"seq": self.seq, "points": [{"name": k, "step": step, "value": v} for k, v in finite.items()]}
        if events:
            batch["events"] = [e[:1000] for e in events]
        if trace is not None:
            batch["trace"] = {"iteration": step, "requests": trace}
            if trace_meta is not None:
                batch["trace"]["meta"] = trace_meta
        self.pending.append(batch)
        if not self.url:
            log.info("metrics step %s: %s", step, metrics)
            self.pending.clear()
            return True
        return self.flush()

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
