"""Step-time model of one rollout instance: seconds per engine step as a function of the
batch (sequences and tokens verified) and the context held in the KV cache.

``T = c0 + c_seq * tokens + c_ctx * context_tokens + c_host * other_tokens`` where ``tokens``
= batch * (1 + draft tokens per sequence) and ``other_tokens`` the tokens the host's other
instances decode per step (ours: instances that share one machine's cores slow each other,
so an instance alone in a tail decodes faster; 0 where each instance has its own GPUs); a
chunk's prefill adds ``c_prefill`` per computed token. Fitted by ``umbra bench profile`` from
measurements of the real engine.
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class StepModel:
    """Coefficients in seconds: per step, per verified token, per context token, per prefill
    token, per token another instance of the same host decodes in the step."""

    c0: float
    c_seq: float
    c_ctx: float
    c_prefill: float
    c_host: float = 0.0

    def __post_init__(self):
        coefs = (self.c0, self.c_seq, self.c_ctx, self.c_prefill, self.c_host)
        if not all(math.isfinite(c) and 0 <= c <= 1e3 for c in coefs) or self.c0 + self.c_seq < 1e-9:
            raise ValueError("step model coefficients must be finite, within [0, 1000] s, and c0 + c_seq >= 1e-9 s")

    def seconds(self, batch: int, context_tokens: float, draft_per_seq: float = 0.0, other_tokens: float = 0.0) -> float:
        """One decode step of ``batch`` sequences holding ``context_tokens`` in total, while the
        host's other instances decode ``other_tokens`` tokens a step."""
        return (self.c0 + self.c_seq * batch * (1.0 + draft_per_seq) + self.c_ctx * context_tokens
                + self.c_host * other_tokens)

    def to_json(self, path: str, **extra) -> None:
        with open(path, "w") as fh:
            json.dump({**asdict(self), **extra}, fh, indent=2)

    @classmethod
    def from_json(cls, path: str) -> "StepModel":
        """Raises ValueError when the file is not a saved step model."""
        import os

        try:
            if not os.path.isfile(path) or os.path.getsize(path) > 10_000_000:
                raise ValueError("not a regular file of at most 10 MB")
            with open(path) as fh:
                d = json.load(fh)
            values = [d["c0"], d["c_seq"], d["c_ctx"], d["c_prefill"], d.get("c_host", 0.0)]
            if any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in values):
                raise ValueError("every coefficient must be a number")
            return cls(*map(float, values))
        except (OSError, ValueError, KeyError, TypeError, RecursionError) as exc:
            raise ValueError(f"{path}: not a step model ({exc})") from None


# This machine (2 CPU cores, two SmolLM2-135M engines sharing them): fitted by `umbra bench profile
# --from-trace` to a static-group rollout (c_prefill from timed batches);
# used when no profile was saved.
CPU_SMOLLM2 = StepModel(c0=0.0, c_seq=0.0081, c_ctx=4.0e-6, c_prefill=0.00054)


def fit(samples: list[tuple]) -> StepModel:
    """Least squares in relative error over ``(batch, context_tokens, draft_per_seq, seconds)`` decode samples,
    or ``(..., seconds, other_tokens)`` with the host's other instances' tokens per step
    (non-negative coefficients: a negative one is dropped and the rest refitted).
    ``c_prefill`` is left 0 (fit it separately). Raises ValueError with fewer than 3 samples."""
    import numpy as np

    if len(samples) < 3:
        raise ValueError("need at least 3 samples to fit a step model")
    if not all(math.isfinite(v) for smp in samples for v in smp):
        raise ValueError("the samples hold a time or size that is not a finite number")
    if len({smp[0] * (1 + smp[2]) for smp in samples}) < 2:
        raise ValueError("the samples do not determine a step model: every one ran the same batch size "
                         "(time more batch sizes, or record a rollout with more requests than instance slots)")
    x = np.array([[1.0, s[0] * (1 + s[2]), s[1], s[4] if len(s) > 4 else 0.0] for s in samples])
    y = np.array([s[3] for s in samples])
    # relative error (ours): a rollout's tail runs at small batches, which plain least squares,
    # dominated by the many long full-batch steps, fits worst
    w = 1.0 / np.maximum(y, 1e-9)
    x, y = x * w[:, None], y * w
    keep = [0, 1, 2, 3]
    while True:
        coef, *_ = np.linalg.lstsq(x[:, keep], y, rcond=None)
        if (coef >= 0).all() or len(keep) == 1:
            break
        keep.pop(int(np.argmin(coef)))
    full = [0.0, 0.0, 0.0, 0.0]
    for k, c in zip(keep, coef):
        full[k] = max(0.0, float(c))
    if full[0] + full[1] < 1e-9:
        raise ValueError("the samples do not determine a step model: they need different batch sizes "
                         "(time more batch sizes, or record a rollout with more requests than instance slots)")
    return StepModel(c0=full[0], c_seq=full[1], c_ctx=full[2], c_prefill=0.0, c_host=full[3])


def samples_from_trace(records: list[dict], min_tokens: int = 16,
                       shared_host: bool = False) -> list[tuple[int, float, float, float, int]]:
    """Decode samples ``(batch, context_tokens, 0, seconds per step, other_tokens)`` read off a
    recorded rollout (``umbra bench rollout --trace`` records with ``chunks`` and
    ``prompt_tokens``): per chunk of at least ``min_tokens`` tokens, its seconds per token, the
    chunks running on its instance at its midpoint with their contexts then (prompt + tokens so
    far), and with ``shared_host`` (the rollout's instances shared one machine, as in
    ``umbra bench rollout``) the chunks running on its other instances then, else 0. A trace of several policies holds one
    rollout per policy, each timed from its own start: chunks overlap only within one
    policy's rollout."""
    chunks = []  # ((policy, instance), start, finish, tokens, prompt, generated before)
    for r in records:
        done = 0
        for inst, start, finish, tokens in r.get("chunks") or []:
            chunks.append(((r.get("policy"), inst), start, finish, tokens, r.get("prompt_tokens") or 0, done))
            done += tokens
    by_inst: dict[int, list] = {}
    for c in chunks:
        by_inst.setdefault(c[0], []).append(c)
    samples = []
    for inst, cs in by_inst.items():
        others = [c for key, c2 in by_inst.items() if shared_host and key != inst and key[0] == inst[0] for c in c2]
        for _, start, finish, tokens, prompt, done in cs:
            if tokens < min_tokens or finish <= start:
                continue
            mid = (start + finish) / 2
            batch, ctx = 0, 0.0
            for _, s2, f2, t2, p2, d2 in cs:
                if s2 <= mid < f2:
                    batch += 1
                    ctx += p2 + d2 + t2 * (mid - s2) / (f2 - s2)
            other = sum(1 for _, s2, f2, *_ in others if s2 <= mid < f2)
            samples.append((batch, ctx, 0.0, (finish - start) / tokens, other))
    return samples
