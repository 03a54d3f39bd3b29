"""Which growth reserve a Seer instance keeps for its parked requests (ours: Seer parks KV in
a global pool and keeps none).

- ``"estimate"`` admits a new request only while every resident can still run to its group's
  estimate (``max_tokens`` while the group has no finished response): no KV is ever given up,
  but the first iteration runs at the worst-case concurrency (the static cap).
- ``"adaptive"`` keeps one chunk per parked request until an instance first has to give up
  KV: full concurrency, paid for with re-prefill when the residents outgrow the cache.

Which loss is smaller depends on what concurrency is worth on the engine. Where a decode
step's time grows in proportion to its batch (a compute-bound CPU engine) a smaller batch
decodes as many tokens a second, so the estimate reserve costs nothing and saves the
re-prefill; where a step costs about the same at any batch (a memory-bound GPU) concurrency
is throughput, and re-prefilling costs less. ``"auto"`` decides from the engine's step time
(:func:`choose`). Measured in the simulator: GSM8K-like workloads on the CPU step model
re-prefill 15-29% of output tokens under "adaptive" and at most 1% under "estimate"; the
moonlight preset (GPU) runs 1.27x verl under "adaptive" and 0.89x under "estimate". Where the
two cross, by the per-token ratio :func:`choose` reads (a sweep of step models, README): at a
ratio of 1.15-1.3 where a prefilled token costs what it does on a CPU engine (2.4 ms), about
1.1 where prefill is ten times cheaper; the GPU presets read 1.5-2.5. On real CPU engines
(README, both reserves in one run, five runs) "estimate" ran at 0.965-1.063x the throughput
of "adaptive" (mean 1.015) with no re-prefill against 20-27%; the runs' probes read 1.11,
1.21 and 1.46 where recorded, and "estimate" was the faster at 1.11 and 1.21 and the slower at
1.46. So "auto" takes "adaptive" only above the crossover's upper end, 1.3 (ours): below it
the throughputs tie within this machine's noise, and the estimate reserve re-prefills nothing
and has the shorter tail in four runs of five. Where prefill is cheap (a GPU) a ratio of
1.1-1.3 then costs up to 6% (the sweep's cheap-prefill row). The threshold is not right for
every workload: at temperature 0.7 and 768 tokens (README, runs w2d and w2e), the probe read 1.13,
and "estimate" ran at 0.86x and 0.96x verl, where "adaptive" ran at 1.02x with 8% re-prefilled.
The crossover lies lower where "adaptive" gives up less KV.

So from a run's second rollout on, the previous rollout's lengths move the threshold (ours,
:func:`over_reserved`): the estimate reserve holds ``max_tokens`` for every resident of a group
with no finished response, which over-holds the KV most where responses end far short of it.
In the simulator (256 requests of G = 8, lognormal lengths, ``max_tokens`` 512 and 768, 2-3
seeds; README), on a step with a fixed part (57 ms + 3.3 ms a sequence, as this machine's
engines fit), "estimate" ran at 0.87-0.98x "adaptive" wherever the mean response was under
60% of ``max_tokens``, though "adaptive" re-prefilled up to 18% of the output there;
0.96-1.00x at 65-70% and 1.01-1.05x at 88%. On a step in proportion to the batch
(``CPU_SMOLLM2``) the two tied (0.90-1.06x) at every length. So after a rollout whose mean
length was under :data:`FILL` of ``max_tokens``, "auto" takes "adaptive" wherever concurrency
buys more than :data:`FILL_TOLERANCE`; in a run's first rollout, where no length is known,
and after longer ones, the threshold stays :data:`TOLERANCE`.
"""
from __future__ import annotations

from collections.abc import Callable

# Per-token step time at the worst-case batch within this factor of the full batch's: what
# concurrency buys does not pay for adaptive's re-prefill, so the estimate reserve is chosen
# (ours: the upper end of the simulated crossover at a CPU's prefill cost, above).
TOLERANCE = 1.3

# The previous rollout's mean response length over ``max_tokens`` below which the estimate
# reserve over-holds KV by more than adaptive's re-prefill costs (ours: the simulated crossover,
# above, lies at 0.65-0.7; 0.6 leaves the ties to the probe) ...
FILL = 0.6
# ... and the threshold there: concurrency that buys 5% pays for what "adaptive" re-prefills
FILL_TOLERANCE = 1.05


def fill(requests) -> float | None:
    """The finished ``requests``' mean share of their ``max_tokens`` generated, or None when
    none finished (a run's first rollout)."""
    shares = [r.num_generated / r.max_tokens for r in requests if r.done and r.max_tokens]
    return sum(shares) / len(shares) if shares else None


def over_reserved(previous_fill: float | None) -> bool:
    """Whether the previous rollout's lengths say the estimate reserve would over-hold KV
    (``previous_fill`` below :data:`FILL`; False without a previous rollout)."""
    return previous_fill is not None and previous_fill < FILL


def choose(step_seconds: Callable[[int], float] | None, worst_case_batch: int, full_batch: int,
           tolerance: float | None = None, previous_fill: float | None = None) -> str:
    """``"estimate"`` when a decode step of ``worst_case_batch`` sequences costs at most
    ``tolerance`` times per token what one of ``full_batch`` costs, else ``"adaptive"``
    (also without a step time: concurrency's worth is then unknown, and adaptive is what the
    simulator measured best on the GPU presets). ``step_seconds(batch)``: seconds of one
    decode step of ``batch`` sequences. ``tolerance`` by default: :data:`FILL_TOLERANCE` where
    the previous rollout's :func:`fill` was :func:`over_reserved`, else :data:`TOLERANCE`."""
    if tolerance is None:
        tolerance = FILL_TOLERANCE if over_reserved(previous_fill) else TOLERANCE
    if step_seconds is None:
        return "adaptive"
    low, high = max(1, worst_case_batch), max(1, full_batch)
    if low >= high:
        return "estimate"  # the reserve costs no concurrency at all
    per_token_low, per_token_high = step_seconds(low) / low, step_seconds(high) / high
    return "estimate" if per_token_low <= tolerance * per_token_high else "adaptive"


def batches(ledger, capacities: list[int], prompt_tokens: int, max_tokens: int, chunk_tokens: int) -> tuple[int, int]:
    """``(worst_case, full)`` sequences per instance at the start of a rollout (the smallest
    over instances): every request held at ``prompt_tokens + max_tokens`` (the estimate
    reserve with no estimate yet), or at ``prompt_tokens`` plus one chunk (the adaptive one)."""
    live = [(c, slots) for c, slots in zip(ledger.capacity, capacities) if c > 0]
    if not live:
        return 1, 1
    worst = min(min(slots, c // ledger.blocks(prompt_tokens + max_tokens)) for c, slots in live)
    full = min(min(slots, c // ledger.blocks(prompt_tokens + min(chunk_tokens, max_tokens))) for c, slots in live)
    return worst, full
