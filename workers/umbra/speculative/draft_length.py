"""Adaptive draft length per batch (Seer Alg. 1, marginal-benefit-aware; our reading).

With per-position acceptance rates ``a_k`` (the probability that draft token k is
accepted given tokens 1..k-1 were), a request drafting ``g`` tokens gains
``E(g) = 1 + sum_{k<=g} prod_{j<=k} a_j`` tokens per verification step (the 1 is the
bonus/normal token). A step over ``B`` requests costs ``T(B, g) = c0 + c1 * B * (1 + g)``
seconds (fitted online). Starting from g = 0 the draft grows while the marginal token
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
    """Online least-squares fit of step seconds ``T = c0 + c1 * tokens`` (tokens = B * (1 + g))."""

    def __init__(self, c0: float = 0.02, c1: float = 0.001, decay: float = 0.99):
        self.c0, self.c1, self.decay = c0, c1, decay
        self.n = self.sx = self.sy = self.sxx = self.sxy = 0.0

    def observe(self, tokens: float, seconds: float) -> None:
        d = self.decay
        self.n, self.sx, self.sy = d * self.n + 1, d * self.sx + tokens, d * self.sy + seconds
        self.sxx, self.sxy = d * self.sxx + tokens * tokens, d * self.sxy + tokens * seconds
        var = self.n * self.sxx - self.sx ** 2
        if self.n >= 8 and var > 1e-9:
            c1 = (self.n * self.sxy - self.sx * self.sy) / var
            if c1 > 0:
                self.c1 = c1
                self.c0 = max(0.0, (self.sy - c1 * self.sx) / self.n)

    def seconds(self, batch: int, g: int) -> float:
        return self.c0 + self.c1 * batch * (1 + g)


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
