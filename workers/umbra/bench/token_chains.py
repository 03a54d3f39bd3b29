"""Tokens a speculative step moves when each draft position holds with a known chance, chained
along a response (``umbra bench accept-ceiling`` and ``draft_agreement``; ours)."""
from __future__ import annotations

GAMMA_MAX = 8


def expected_tokens(pmax: list[list[float]], gamma_max: int = GAMMA_MAX) -> list[float]:
    """``[E(0), ..., E(gamma_max)]`` over every position of every response
    (:mod:`umbra.bench.accept_ceiling`); ``pmax[r][t]`` is the chance a draft of response r's
    t-th token holds (its largest probability, for the best token drafter)."""
    totals, count = [0.0] * (gamma_max + 1), 0
    for row in pmax:
        for t in range(len(row)):
            count += 1
            run, acc = 1.0, 1.0
            totals[0] += 1.0
            for k in range(1, gamma_max + 1):
                # drafting position t + k (the token after t + k - 1): accepted with p_max there
                acc *= row[t + k] if t + k < len(row) else 0.0
                run += acc
                totals[k] += run
    return [x / count for x in totals] if count else [1.0] * (gamma_max + 1)


def equivalent_rate(e: float, g: int) -> float:
    """The per-position rate ``a`` with ``sum_{k<=g} a^k = e`` (bisection): the single number
    ``umbra bench spec-bound --accept-rate`` would need to give ``E(g)``."""
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if sum(mid ** k for k in range(g + 1)) < e:
            lo = mid
        else:
            hi = mid
    return lo
