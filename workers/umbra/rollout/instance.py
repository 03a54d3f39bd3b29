"""One rollout instance: a vLLM engine (``AsyncLLM``) inside a Ray actor.

Created with :func:`start_instances`; every method is async so the actor keeps
serving while requests decode.
"""
from __future__ import annotations

import asyncio
import os
import time
from typing import Any

from umbra.rollout.request import Request


class RolloutInstance:
    """A vLLM engine holding ``kv_cache_gib`` GiB of KV cache and at most
    ``max_num_seqs`` running sequences.

    Raises at construction if vLLM cannot load ``model_path``.
    """

    def __init__(self, instance_id: int, model_path: str, max_model_len: int, max_num_seqs: int,
                 seed: int, temperature: float):
        from vllm import AsyncEngineArgs
        from vllm.v1.engine.async_llm import AsyncLLM

        self.instance_id = instance_id
        self.temperature = temperature
        self.policy_version = 0
        args = AsyncEngineArgs(
            model=model_path, dtype="float32", max_model_len=max_model_len, max_num_seqs=max_num_seqs,
            seed=seed, enforce_eager=True, enable_prefix_caching=True,
            # No partial prefills: vLLM rewinds a seeded request's generator after a
            # partial prefill, which the CPU generator cannot do ("does not use offset").
            enable_chunked_prefill=False, max_num_batched_tokens=max(max_model_len, 4096),
            worker_extension_cls="umbra.rollout.vllm_worker_ext.WeightSyncExtension",
        )
        self.engine = AsyncLLM.from_engine_args(args)

    def ready(self) -> dict[str, Any]:
        """Cheap liveness probe: id, pid and the loaded policy version."""
        return {"instance": self.instance_id, "pid": os.getpid(), "policy_version": self.policy_version}

    async def _run_one(self, req: Request) -> Request:
        from vllm import SamplingParams

        params = SamplingParams(n=1, temperature=self.temperature, max_tokens=req.max_tokens, seed=req.seed)
        req.instance, req.policy_version, req.start_s = self.instance_id, self.policy_version, time.time()
        final = None
        async for out in self.engine.generate({"prompt_token_ids": req.prompt_token_ids}, params,
                                              f"{req.request_id}-v{self.policy_version}"):
            final = out
        completion = final.outputs[0]
        req.output_token_ids = list(completion.token_ids)
        req.finish_reason = completion.finish_reason
        req.finish_s = time.time()
        return req

    async def generate(self, requests: list[Request]) -> list[Request]:
        """Run ``requests`` concurrently to completion; returns them filled in
        (output tokens, start/finish times, instance, policy version)."""
        return list(await asyncio.gather(*(self._run_one(r) for r in requests)))

    async def load_weights(self, blob: bytes, version: int) -> list[str]:
        """Load new weights (safetensors bytes) into every worker; returns their sha256s.

        Must not be called while requests run (synchronous RL: rollout, then sync).
        """
        digests = await self.engine.collective_rpc("umbra_load_weights", args=(blob,))
        await self.engine.reset_prefix_cache()  # cached KV belongs to the old weights
        self.policy_version = version
        return digests

    async def prompt_logprobs(self, token_ids: list[int]) -> list[float]:
        """Log-probability of each prompt token after the first under the
        loaded weights (shape ``[len(token_ids) - 1]``); used to check weight sync."""
        from vllm import SamplingParams

        params = SamplingParams(max_tokens=1, prompt_logprobs=0, temperature=1.0)
        final = None
        async for out in self.engine.generate({"prompt_token_ids": token_ids}, params,
                                              f"logprobs-{time.time_ns()}"):
            final = out
        result = []
        for tok, entry in zip(token_ids[1:], final.prompt_logprobs[1:]):
            result.append(float(entry[tok].logprob))
        return result

    def shutdown(self) -> None:
        """Stop the engine's processes."""
        self.engine.shutdown()


def start_instances(n: int, model_path: str, max_model_len: int, max_num_seqs: int, seed: int,
                    temperature: float, kv_cache_gib: int, num_cpus: float = 0.5) -> list:
    """Start ``n`` RolloutInstance Ray actors and wait until each engine is up.

    Returns the actor handles. Raises ``ray.exceptions.RayActorError`` when an
    engine fails to start (e.g. a model vLLM cannot load).
    """
    import ray

    env = {"VLLM_CPU_KVCACHE_SPACE": str(kv_cache_gib), "VLLM_CPU_OMP_THREADS_BIND": "nobind",
           "TOKENIZERS_PARALLELISM": "false"}
    actor_cls = ray.remote(RolloutInstance)
    handles = [
        actor_cls.options(num_cpus=num_cpus, runtime_env={"env_vars": env}, name=None)
        .remote(i, model_path, max_model_len, max_num_seqs, seed + i, temperature)
        for i in range(n)
    ]
    ray.get([h.ready.remote() for h in handles])
    return handles
