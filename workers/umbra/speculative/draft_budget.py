"""Per-token draft budget (ours; Seer Alg. 1's marginal rule, handed out token by token).

Seer Alg. 1 picks one draft length ``g`` for the batch from per-position acceptance rates
averaged over every request, then hands tokens to two classes (probes, the rest) by their
marginal gain. Here every row is its own class and every draft token its own decision:

- a draft token's chance of being accepted is read from its suffix-count support (Seer
  §3.4 weights candidates by suffix counts, after SuffixDecoding): of the ``total`` group
  paths still matching before it, ``agree`` continue with it. The group's other responses
  are samples of the same policy after the same prompt, so their agreement tracks the
  policy's own probability of that token, which is what vLLM accepts it with.
  :class:`DraftConfidence` calibrates the score on the verdicts the engine returns;
- token k of a row is accepted only if tokens 1..k-1 were, so its gain is the chain
  ``Q_k = q_1 ... q_k``; tokens are taken in falling ``Q`` while one more verified token
  raises the step's tokens per second, ``Q * T > tokens * c_draft`` (``T``: the step's
  seconds so far from :class:`~umbra.speculative.draft_length.StepCost`, ``tokens``: its
  expected tokens so far). A row whose support is weak drafts nothing while a row where
  the group agrees drafts far, in the same step.

Measured on two CPU cores it reaches longer acceptance than Alg. 1 but no more throughput
(README, "Grouped speculative decoding"), so it runs only as the ``grouped-budget`` method.
"""
from __future__ import annotations

import heapq


class DraftConfidence:
    """Acceptance probability of a draft token by its support's score ``agree / (total + 1)``
    (one path agreeing scores 0.5, seven of seven 0.875), in ``bins`` bins, each the decayed
    hit rate of the draft tokens verified in it, pulled toward the bin's centre by ``weight``
    pseudo-trials (the prior before any verdict)."""

    def __init__(self, bins: int = 10, weight: float = 4.0, decay: float = 0.995):
        self.bins, self.weight, self.decay = bins, weight, decay
        self.hits = [0.0] * bins
        self.trials = [0.0] * bins

    def bin(self, agree: int, total: int) -> int:
        return min(self.bins - 1, int(self.bins * agree / (total + 1)))

    def rate(self, b: int) -> float:
        return (self.hits[b] + self.weight * (b + 0.5) / self.bins) / (self.trials[b] + self.weight)

    def update(self, bins: list[int], accepted: int) -> None:
        """One verification of a draft whose tokens were scored in ``bins``, of which the
        first ``accepted`` held (the next one was rejected; those after it were not judged)."""
        for k, b in enumerate(bins[:accepted + 1]):
            self.hits[b] = self.decay * self.hits[b] + (1.0 if k < accepted else 0.0)
            self.trials[b] = self.decay * self.trials[b] + 1.0


def chain(rates: list[float]) -> list[float]:
    """``Q_k = q_1 ... q_k``: the chance that a row's draft token k is accepted."""
    out, run = [], 1.0
    for q in rates:
        run *= q
        out.append(run)
    return out


def allocate(chains: list[list[float]], rows: int, c_step: float, c_draft: float, gamma_max: int = 8) -> list[int]:
    """Draft tokens per row (a prefix of each row's candidates): ``chains[i]`` is row i's
    non-increasing ``Q_1, Q_2, ...``; ``rows`` rows make a step of ``c_step`` seconds without
    drafts, each verified draft token adds ``c_draft``. Greedy in falling ``Q`` while a token
    raises the step's expected tokens per second (see the module doc)."""
    lengths = [0] * len(chains)
    if gamma_max <= 0:
        return lengths
    seconds, tokens = c_step, float(rows)
    heap = [(-c[0], i, 0) for i, c in enumerate(chains) if c]
    heapq.heapify(heap)
    while heap:
        neg_q, i, k = heapq.heappop(heap)
        if -neg_q * seconds <= tokens * c_draft:
            break  # every token left has Q no larger: none pays
        lengths[i] = k + 1
        seconds += c_draft
        tokens -= neg_q
        if k + 1 < min(len(chains[i]), gamma_max):
            heapq.heappush(heap, (-chains[i][k + 1], i, k + 1))
    return lengths
