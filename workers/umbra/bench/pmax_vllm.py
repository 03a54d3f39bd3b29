"""``accept-ceiling --engine vllm``: the policy's responses and ``p_max`` sampled on one vLLM
engine (ours). The same records as :func:`umbra.bench.accept_ceiling.sample_pmax` reads with
transformers, from the engine the rollout runs: its sampling distribution after temperature
(``logprobs_mode="processed_logprobs"``), the ``top`` most likely tokens at every position.
Paged KV makes it many times faster on a CPU than transformers' growing cache, which copies
the whole cache at every step."""
from __future__ import annotations

import math
import os


def sample_pmax_vllm(model_path: str, prompts: list[list[int]], group_size: int, max_tokens: int,
                     temperature: float, batch: int, seed: int, top: int, record: list | None = None,
                     llm=None) -> tuple[list[list[float]], object]:
    """``p_max`` per generated token of ``group_size`` responses per prompt, and the engine (pass it
    back as ``llm`` to sample again: a later round). With ``record``, the rows are appended in
    batches of ``batch``, as ``draft_agreement.replay`` reads them: ``(prompt index, sampled tokens,
    the ``top`` most likely (token, p) per position)``. Each response has a seed of its own from
    ``seed`` and its row, so a later round with another ``seed`` draws other responses."""
    from vllm import LLM, SamplingParams

    if llm is None:
        os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")
        longest = max(len(p) for p in prompts) + max_tokens
        # as the rollout engines run: eager, no partial prefill (the CPU generator cannot rewind a seed)
        llm = LLM(model=model_path, dtype="float32", max_model_len=longest, max_num_seqs=batch, enforce_eager=True,
                  seed=seed, enable_chunked_prefill=False, max_num_batched_tokens=max(4096, longest),
                  enable_prefix_caching=True, logprobs_mode="processed_logprobs", max_logprobs=top)
    rows = [(g, p) for g, p in enumerate(prompts) for _ in range(group_size)]
    params = [SamplingParams(temperature=temperature, max_tokens=max_tokens, logprobs=top,
                             seed=seed * 100_003 + i) for i in range(len(rows))]
    outs = llm.generate([{"prompt_token_ids": p} for _, p in rows], params, use_tqdm=False)
    pmax: list[list[float]] = []
    seen: list[tuple] = []
    for (g, _), out in zip(rows, outs):
        c = out.outputs[0]
        dists = []
        for d in c.logprobs:  # token -> Logprob; the sampled token is there even when not among the top
            best = sorted(d.items(), key=lambda kv: kv[1].rank)[:top]
            dists.append([(t, math.exp(lp.logprob)) for t, lp in best])
        pmax.append([dist[0][1] for dist in dists])
        seen.append((g, list(c.token_ids), dists))
    if record is not None:
        record.extend(seen[b:b + batch] for b in range(0, len(seen), batch))
    print(f"  sampled {len(rows)} responses on vLLM", flush=True)
    return pmax, llm


def close(llm) -> None:
    """Stop the engine's processes now (left to the interpreter's exit, they are killed mid-log)."""
    if llm is not None:
        llm.llm_engine.engine_core.shutdown()
