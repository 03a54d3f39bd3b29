"""One rollout instance: a vLLM engine (``AsyncLLM``) inside a Ray actor.

Created with :func:`start_instances`; every method is async so the actor keeps
serving while requests decode.
"""
from __future__ import annotations

import asyncio
import logging
import os
import time
from typing import Any

from umbra.telemetry import probe

log = logging.getLogger(__name__)


def kv_block_tokens() -> int:
    """KV cache block size (tokens) of the engines on this node. The prefix cache reuses
    whole blocks only, so small blocks keep a chunk's re-prefill small: vLLM's CPU default
    of 128 would re-prefill ~64 tokens per chunk; 32 is the smallest its CPU attention
    kernel takes; 16 (the usual CUDA size) elsewhere. The Seer policy aligns chunk ends to it."""
    from vllm.platforms import current_platform

    return 32 if current_platform.is_cpu() else 16


# Speculative decoding methods an engine can run: vLLM's ``speculative_config`` for each, less
# ``num_speculative_tokens``. "grouped" drafts from the draft server's group structures (ours,
# Seer §3.4); "ngram" is vLLM's own prompt lookup (the request's own context only); "null"
# proposes nothing (``umbra bench spec-cost``: what the speculative path costs by itself);
# "draft<g>" always drafts g tokens that get rejected (what a verified draft token costs).
SPECULATION = {
    # one draft length per batch (Seer Alg. 1); "grouped-budget": the per-token budget (ours,
    # measured beside it, not the default: README, "Grouped speculative decoding")
    "grouped": {"method": "custom_class", "model": "umbra.speculative.proposer.GroupedSuffixProposer"},
    "grouped-budget": {"method": "custom_class", "model": "umbra.speculative.proposer.TokenBudgetProposer"},
    # as vLLM's documentation sets it up (5 draft tokens from a 4-gram match)
    "ngram": {"method": "ngram", "prompt_lookup_max": 4, "num_speculative_tokens": 5},
    "null": {"method": "custom_class", "model": "umbra.speculative.proposer.NullProposer"},
    # g rejected draft tokens on every row ("draft1".."draft8"): what verifying a draft token costs
    **{f"draft{g}": {"method": "custom_class", "model": "umbra.speculative.proposer.FixedDraftProposer",
                     "num_speculative_tokens": g} for g in (1, 2, 4, 8)},
}
GROUPED = ("grouped", "grouped-budget")  # the methods that draft from the draft server


class RolloutInstance:
    """A vLLM engine holding ``kv_cache_gib`` GiB of KV cache (or exactly ``kv_blocks`` KV
    blocks, vLLM's ``num_gpu_blocks_override``) and at most ``max_num_seqs`` running sequences.

    ``speculation`` (a key of :data:`SPECULATION`, drafting up to ``gamma_max`` tokens) runs
    speculative decoding; with a ``draft_server`` it is "grouped". Raises at construction if
    vLLM cannot load ``model_path``.
    """

    def __init__(self, instance_id: int, model_path: str, max_model_len: int, max_num_seqs: int, seed: int,
                 draft_server=None, gamma_max: int = 8, kv_cache_gib: int | None = None,
                 kv_blocks: int | None = None, speculation: str | None = None):
        from vllm import AsyncEngineArgs
        from vllm.platforms import current_platform
        from vllm.v1.engine.async_llm import AsyncLLM

        self.instance_id = instance_id
        self.policy_version = 0
        self.kv_block_tokens = kv_block_tokens()
        self.draft_server = draft_server  # grouped speculative decoding when set
        self.draft_versions: dict[int, int] = {}
        self._refreshing: set[int] = set()  # groups whose draft refresh is under way
        self._refresh_tasks: set = set()  # held: the event loop keeps only weak references to tasks
        self._draft_epoch = 0  # bumped by reset_drafts: a refresh begun before it is dropped
        if draft_server is not None and speculation not in GROUPED:
            speculation = "grouped"
        spec = None if speculation is None else {"num_speculative_tokens": gamma_max, **SPECULATION[speculation]}
        args = AsyncEngineArgs(
            speculative_config=spec,
            model=model_path, dtype="float32", max_model_len=max_model_len, max_num_seqs=max_num_seqs,
            seed=seed, enforce_eager=True, enable_prefix_caching=True, block_size=self.kv_block_tokens,
            # No partial prefills: vLLM rewinds a seeded request's generator after a
            # partial prefill, which the CPU generator cannot do ("does not use offset").
            enable_chunked_prefill=False, max_num_batched_tokens=max(max_model_len, 4096),
            worker_extension_cls="umbra.rollout.vllm_worker_ext.WorkerExtension",
            # On CPU the KV budget is VLLM_CPU_KVCACHE_SPACE (set by start_instances); on a
            # GPU it is given in bytes so the engine does not claim 90% of the device.
            kv_cache_memory_bytes=(kv_cache_gib * 2**30 if kv_cache_gib and not current_platform.is_cpu() else None),
            num_gpu_blocks_override=kv_blocks,
            # eviction that follows the policy's KV ledger; async scheduling only where vLLM would use it
            scheduler_cls=("umbra.rollout.ledger_scheduler." + (
                "LedgerScheduler" if current_platform.is_cpu() or spec else "AsyncLedgerScheduler")),
        )
        self.engine = AsyncLLM.from_engine_args(args)
        probe.own_sample()  # starts the CPU measurement of this actor and its engine processes

    def system_sample(self) -> dict:
        """This actor's process, the vLLM engine processes it started and its node: CPU,
        memory, GPU (``umbra.telemetry.probe``)."""
        return probe.own_sample()

    def ready(self) -> dict[str, Any]:
        """Cheap liveness probe: id, pid, the Ray node id (hex) it runs on, the loaded
        policy version, the KV block size and the KV cache's size in tokens (the blocks
        vLLM allocated, less its one null block)."""
        import ray

        blocks = self.engine.vllm_config.cache_config.num_gpu_blocks or 0
        return {"instance": self.instance_id, "pid": os.getpid(), "node_id": ray.get_runtime_context().get_node_id(),
                "policy_version": self.policy_version, "kv_block_tokens": self.kv_block_tokens,
                "kv_cache_tokens": max(0, blocks - 1) * self.kv_block_tokens}

    async def generate_chunk(self, request_id: str, group_id: int, prompt_token_ids: list[int],
                             generated: list[int], max_tokens: int, seed: int,
                             temperature: float, ignore_eos: bool = False,
                             kv: dict | None = None) -> dict[str, Any]:
        """Generate up to ``max_tokens`` more tokens of a request whose context is
        ``prompt_token_ids + generated`` (the prefix cache reuses its KV when it ran here before).

        Returns ``{"tokens", "finish_reason" ("stop" at EOS, else "length"), "start_s",
        "finish_s", "policy_version", "prefill_tokens"}``; times are wall-clock seconds;
        ``prefill_tokens`` counts context tokens computed, not served by the prefix cache.
        ``ignore_eos`` (profiling): generate exactly ``max_tokens`` tokens. ``kv`` (a policy with
        a KV ledger): ``{"final": the chunk may be the request's last, "release": request ids
        whose cached KV here the ledger dropped}``, read by the engine's scheduler
        (:mod:`umbra.rollout.ledger_scheduler`) so that its eviction follows the ledger.
        """
        from vllm import SamplingParams

        if self.draft_server is not None and group_id not in self._refreshing:
            # off the chunk's path (ours; Seer's draft server also pushes updates
            # asynchronously): awaited, the draft server's reply and the engine-side update,
            # which waits for the running step to end, kept the request out of a step or two
            self._refreshing.add(group_id)
            task = asyncio.get_running_loop().create_task(self._refresh_drafts(group_id, prompt_token_ids))
            self._refresh_tasks.add(task)
            task.add_done_callback(self._refresh_tasks.discard)
        extra = None if kv is None else {"umbra_kv": {"key": request_id, **kv}}
        params = SamplingParams(n=1, temperature=temperature, max_tokens=max_tokens, seed=seed, ignore_eos=ignore_eos,
                                extra_args=extra)
        start = time.time()
        final = None
        async for out in self.engine.generate({"prompt_token_ids": prompt_token_ids + generated}, params,
                                              f"{request_id}-{len(generated)}-v{self.policy_version}"):
            final = out
        completion = final.outputs[0]
        context = len(prompt_token_ids) + len(generated)
        return {"tokens": list(completion.token_ids), "finish_reason": completion.finish_reason or "length",
                "start_s": start, "finish_s": time.time(), "policy_version": self.policy_version,
                "prefill_tokens": context - min(context, final.num_cached_tokens or 0)}

    async def _refresh_drafts(self, group_id: int, prompt: list[int]) -> None:
        """Pull the group's new tokens from the draft server into the workers' replicas (one
        refresh per group at a time, so that no update is applied twice)."""
        epoch = self._draft_epoch
        try:
            version, updates = await self.draft_server.since.remote(group_id, self.draft_versions.get(group_id, 0))
            if epoch != self._draft_epoch:
                return
            if updates or group_id not in self.draft_versions:
                await self.engine.collective_rpc("umbra_update_drafts", args=(group_id, prompt, updates))
            if epoch == self._draft_epoch:
                self.draft_versions[group_id] = version
        except Exception:  # a draft refresh lost costs drafts, never the rollout
            log.exception("draft refresh of group %s failed", group_id)
        finally:
            if epoch == self._draft_epoch:
                self._refreshing.discard(group_id)

    async def draft_counters(self) -> dict | None:
        """The grouped proposer's Alg. 1 counters since the last call (None without it)."""
        if self.draft_server is None:
            return None
        return (await self.engine.collective_rpc("umbra_draft_counters"))[0]

    async def reset_drafts(self) -> None:
        """Start a new rollout: forget the replicas' groups."""
        self._draft_epoch += 1
        self._refreshing.clear()
        self.draft_versions.clear()
        if self.draft_server is not None:
            await self.engine.collective_rpc("umbra_reset_drafts")

    async def load_weights(self, source: bytes | str, version: int) -> list[str] | None:
        """Load new weights into every worker: safetensors bytes, or the path of a safetensors
        file on this node. Returns per worker the sha256 (bytes) or the path, or None when
        the path does not exist here (the caller then sends bytes).

        Must not be called while requests run (synchronous RL: rollout, then sync).
        """
        if isinstance(source, str):
            if not os.path.exists(source):
                return None
            digests = await self.engine.collective_rpc("umbra_load_weights_file", args=(source,))
        else:
            digests = await self.engine.collective_rpc("umbra_load_weights", args=(source,))
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

    def engine_counters(self) -> dict[str, float]:
        """Cumulative engine counters read from vLLM's metrics: ``preemptions``,
        ``spec_drafts`` (verification steps with a draft), ``spec_draft_tokens``, ``spec_accepted``."""
        from vllm.v1.metrics.reader import Counter, get_metrics_snapshot

        names = {"vllm:num_preemptions": "preemptions", "vllm:spec_decode_num_drafts": "spec_drafts",
                 "vllm:spec_decode_num_draft_tokens": "spec_draft_tokens",
                 "vllm:spec_decode_num_accepted_tokens": "spec_accepted"}
        out = dict.fromkeys(names.values(), 0.0)
        for m in get_metrics_snapshot():
            key = names.get(m.name.removesuffix("_total"))
            if key and isinstance(m, Counter):
                out[key] += float(m.value)
        return out

    def shutdown(self) -> None:
        """Stop the engine's processes."""
        self.engine.shutdown()


INSTANCE_CPUS = 0.5  # what a rollout instance asks of Ray by default


def start_instances(n: int, model_path: str, max_model_len: int, max_num_seqs: int, seed: int,
                    kv_cache_gib: int, draft_server=None, num_cpus: float = INSTANCE_CPUS, first_id: int = 0,
                    kv_blocks: int | None = None, speculation: str | None = None) -> list:
    """Start ``n`` RolloutInstance Ray actors (ids ``first_id..first_id+n-1``) and wait until
    each engine is up; with a ``draft_server`` handle they run grouped speculative decoding,
    with ``speculation`` that method (``SPECULATION``).

    Instances are spread over the cluster's nodes (Ray's ``SPREAD`` strategy: round-robin
    over the nodes with room, best effort, so one node also works), and each one's node
    is logged. Returns the actor handles. Raises ``ray.exceptions.RayActorError`` when an
    engine fails to start (e.g. a model vLLM cannot load).
    """
    import ray

    env = {"VLLM_CPU_KVCACHE_SPACE": str(kv_cache_gib), "VLLM_CPU_OMP_THREADS_BIND": "nobind",
           "TOKENIZERS_PARALLELISM": "false"}
    if os.environ.get("UMBRA_ENGINE_SPIN"):  # the driver's choice reaches the engine processes
        env["UMBRA_ENGINE_SPIN"] = os.environ["UMBRA_ENGINE_SPIN"]
    actor_cls = ray.remote(RolloutInstance)
    gpus = 1 if ray.cluster_resources().get("GPU", 0) >= 1 else 0  # GPU clusters: one device per instance
    handles = [
        actor_cls.options(num_cpus=num_cpus, num_gpus=gpus, runtime_env={"env_vars": env}, name=None,
                          scheduling_strategy="SPREAD")
        .remote(i, model_path, max_model_len, max_num_seqs, seed + i, draft_server, kv_cache_gib=kv_cache_gib,
                kv_blocks=kv_blocks, speculation=speculation)
        for i in range(first_id, first_id + n)
    ]
    for info in ray.get([h.ready.remote() for h in handles]):
        log.info("rollout instance %d on node %s", info["instance"], info["node_id"])
    return handles
