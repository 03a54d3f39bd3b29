"""A speculating engine starts a continued chunk with one row, not a verified run of
placeholders (ours).

vLLM's scheduler pads a newly scheduled request whose only uncached token is its last one
(``num_new_tokens == 1``) to ``1 + num_speculative_tokens`` rows of placeholder drafts (-1),
"to preserve full cudagraph for this step" (``vllm/v1/core/sched/scheduler.py``). Divided
rollout starts every chunk after a request's first in exactly that state: its context is
cached up to the block boundary its last chunk ended on (Seer §3.2). So on a speculating
engine every chunk start cost the step ``num_speculative_tokens`` extra rows (8 with
``gamma_max`` 8, a row costing about what a batch row costs on CPU), and put a draft into a
step that had none, so the rejection sampler ran and Alg. 1's step-cost fit read a
non-drafting step as expensive. Umbra's engines run eager (``enforce_eager=True``): there is
no graph to preserve, and the padding only costs.

vLLM skips the padding when it runs a dynamic draft-length schedule
(``dynamic_sd_lookup``), read only as ``lookup[batch_size]``; :func:`unpad_chunk_starts`
installs one that answers the configured draft length at every batch size, so the engine
drafts exactly as before and pads nothing.
"""
from __future__ import annotations


class _SameDraftLength:
    """vLLM's per-batch-size draft-length table, answering the configured length for every size."""

    def __init__(self, draft_length: int):
        self.draft_length = draft_length

    def __getitem__(self, batch_size: int) -> int:
        return self.draft_length


def unpad_chunk_starts(scheduler) -> None:
    """Turn off vLLM's placeholder padding of one-token starts on ``scheduler`` (a vLLM
    ``Scheduler`` just built); a no-op without speculation or with a dynamic schedule of its own."""
    if getattr(scheduler, "num_spec_tokens", 0) > 0 and getattr(scheduler, "dynamic_sd_lookup", ()) is None:
        scheduler.dynamic_sd_lookup = _SameDraftLength(scheduler.num_spec_tokens)
