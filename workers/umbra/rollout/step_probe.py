"""The rollout instances' decode step time, timed on the engines themselves: what a step of
a given batch costs, for the ``"auto"`` KV reserve (:mod:`umbra.rollout.policies.kv_reserve`)
and ``umbra bench profile``.

Every instance gets the same batch at the same time, so the timing includes the sharing of
one machine's cores by its instances, as in a rollout.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

# Batch sizes and tokens timed before a rollout that needs the step time (15-25 s on this
# machine's CPU engines at an engine length of 675 tokens, 2-3 s at short ones). The batches
# span the concurrencies a rollout runs at, and every sequence holds a context of half the
# engine's length, so the attention cost per sequence is a rollout's: timed at batches 1 and 16
# with 40-token contexts, a SmolLM2 step looked fixed-cost (30 ms + 1.7 ms a sequence), where
# a rollout's own chunks fit 14 ms + 3.5 ms.
PROBE_BATCHES = (16, 64)
PROBE_TOKENS = 16


def probe_prompt(tokens: int, salt: int) -> list[int]:
    """Token ids 1..200 (any vocabulary has them), distinct per ``salt`` (below 200**4, prompts
    of 4+ tokens): prompts of different salts share no prefix-cache block; the same salt gives
    the same prompt (``timed(shared=True)``)."""
    # the salt's base-200 digits lead, so different salts differ in the first block
    head = [1 + (salt // 200 ** k) % 200 for k in range(4)]
    return (head + [1 + (salt * 7919 + t * 31) % 200 for t in range(tokens)])[:tokens]


def timed(instances: list, batch: int, tokens: int, prompt_len: int, salt: int, shared: bool = False) -> float:
    """Seconds until every instance finished ``batch`` requests of exactly ``tokens`` tokens
    (the mean over instances); ``shared``: one prompt per instance and batch, prefilled once
    through the prefix cache."""
    import ray

    refs = {i: [inst.generate_chunk.remote(
        f"probe{salt}-{i}-{j}", salt, probe_prompt(prompt_len, salt * 1000 + i * 100 + (0 if shared else j)), [],
        tokens, j, 1.0, True) for j in range(batch)] for i, inst in enumerate(instances)}
    t0 = time.time()
    ends = [max(o["finish_s"] for o in ray.get(r)) for r in refs.values()]
    return sum(e - t0 for e in ends) / len(ends)


def step_seconds(instances: list, batch: int, tokens: int, prompt_len: int, salt: int) -> tuple[float, float]:
    """``(seconds of one decode step, seconds of the prefill and first step)`` at ``batch``
    sequences of ``prompt_len`` prompt tokens each: ``tokens`` tokens timed less one."""
    full = timed(instances, batch, tokens, prompt_len, salt)
    first = timed(instances, batch, 1, prompt_len, salt + 1)
    return ((full - first) / (tokens - 1) if tokens > 1 else full), first


@dataclass(frozen=True)
class LinearStep:
    """Decode step seconds ``c0 + c_row * batch``: two timed batch sizes (ours)."""

    c0: float
    c_row: float

    def __call__(self, batch: int) -> float:
        return self.c0 + self.c_row * batch


def measure(instances: list, max_model_len: int, max_num_seqs: int, kv_tokens: int, block_tokens: int,
            batches: tuple[int, int] = PROBE_BATCHES, tokens: int = PROBE_TOKENS) -> LinearStep:
    """Time a decode step at the two ``batches`` sizes on every instance at once and fit the line
    through them (negative parts clipped to 0: timing noise). Each sequence holds about half of
    ``max_model_len`` tokens: one prompt shared by the batch (held once, in half of ``kv_tokens``)
    plus its own tokens; the larger batch shrinks to what the other half holds in blocks of
    ``block_tokens`` and to ``max_num_seqs``, so the engine never preempts."""
    tokens = max(2, min(tokens, max_model_len // 4))
    per_seq = -(-(tokens + 1) // block_tokens) + 1  # its own tokens' blocks, and the one it shares the prompt's end in
    high = max(2, min(max(batches), max_num_seqs, (kv_tokens // 2) // block_tokens // per_seq))
    low = max(1, min(min(batches), high // 2))
    prompt = max(1, min(max_model_len // 2, max_model_len - tokens - 1, kv_tokens // 2))
    timed(instances, 2, 2, min(prompt, 8), 0)  # warm-up
    steps = []
    for batch in (low, high):
        timed(instances, 1, 1, prompt, batch)  # prefills the shared prompt: both timings below hit the cache
        full, first = timed(instances, batch, tokens, prompt, batch, True), timed(instances, batch, 1, prompt, batch, True)
        steps.append((full - first) / (tokens - 1))
    t_low, t_high = steps
    c_row = max(0.0, (t_high - t_low) / (high - low))
    return LinearStep(max(0.0, t_low - c_row * low), max(c_row, 1e-9))
