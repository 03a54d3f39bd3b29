"""Data-parallel pieces of the trainer group: the process group, FSDP2 wrapping, and how a
batch's sequences are spread over ranks and cut into micro-batches by a token budget.

Pure torch (no Ray, no vLLM). The spread and the micro-batching follow veRL's dynamic batch
size (``use_dynamic_bsz`` / ``ppo_max_token_len_per_gpu``: micro-batches bounded by tokens,
balanced across data-parallel ranks); the FSDP2 wrapping follows torchtitan's (each decoder
layer, then the root).
"""
from __future__ import annotations

import datetime
import heapq

import torch
import torch.distributed as dist

# A collective that waits longer than this fails (gloo/NCCL raise): a dead peer rank turns
# into an error on the survivors instead of a hang (ours; the driver also watches the actors).
COLLECTIVE_TIMEOUT_S = 600


def init_group(rank: int, world: int, address: str, device: str, timeout_s: float = COLLECTIVE_TIMEOUT_S) -> None:
    """Join the ``world``-rank process group at ``address`` (``host:port`` of rank 0): gloo
    on CPU, NCCL on CUDA."""
    if dist.is_initialized():  # a second trainer in this process (tests) shares the group
        return
    backend = "nccl" if device.startswith("cuda") else "gloo"
    dist.init_process_group(backend, init_method=f"tcp://{address}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=timeout_s))


def decoder_layers(model) -> list:
    """The decoder layers of a Hugging Face causal LM (``model.model.layers`` for the
    Llama/Qwen2/Mistral families). Raises ValueError for another layout."""
    inner = getattr(model, "model", None)
    layers = getattr(inner, "layers", None)
    if layers is None:
        raise ValueError(f"cannot find the decoder layers of {type(model).__name__} (expected model.model.layers)")
    return list(layers)


def shard(model, device: str):
    """FSDP2 ``fully_shard`` per decoder layer, then the root, in place; on CUDA with bf16
    params/compute and fp32 gradient reduction (``MixedPrecisionPolicy``). Returns ``model``."""
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    kwargs = {}
    if device.startswith("cuda"):
        kwargs["mp_policy"] = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for layer in decoder_layers(model):
        fully_shard(layer, **kwargs)
    fully_shard(model, **kwargs)
    return model


def spread(lengths: list[int], ranks: int) -> list[list[int]]:
    """Indices of ``lengths`` per rank so that each rank gets about the same number of tokens
    (longest first onto the least-loaded rank); each rank's indices in ascending order."""
    load = [(0, r) for r in range(ranks)]
    out: list[list[int]] = [[] for _ in range(ranks)]
    for i in sorted(range(len(lengths)), key=lambda i: (-lengths[i], i)):
        tokens, r = heapq.heappop(load)
        out[r].append(i)
        heapq.heappush(load, (tokens + lengths[i], r))
    return [sorted(x) for x in out]


def micro_batches(idx: list[int], lengths: list[int], budget: int) -> list[list[int]]:
    """Cut ``idx`` (in order) into micro-batches whose padded size ``count x longest`` stays
    within ``budget`` tokens; a sequence longer than the budget goes alone."""
    out: list[list[int]] = []
    cur: list[int] = []
    longest = 0
    for i in idx:
        new_longest = max(longest, lengths[i])
        if cur and new_longest * (len(cur) + 1) > budget:
            out.append(cur)
            cur, new_longest = [], lengths[i]
        cur.append(i)
        longest = new_longest
    if cur:
        out.append(cur)
    return out


def split_evenly(micro: list[list[int]], count: int) -> list[list[int]]:
    """``micro`` re-cut into ``count`` micro-batches (or fewer when there are fewer sequences)
    by splitting the largest: FSDP's collectives need the same number of forward/backward
    passes on every rank."""
    micro = [m for m in micro if m]
    while len(micro) < count:
        j = max(range(len(micro)), key=lambda k: len(micro[k])) if micro else None
        if j is None or len(micro[j]) < 2:
            break
        m = micro.pop(j)
        micro[j:j] = [m[: len(m) // 2], m[len(m) // 2:]]
    return micro


def all_sum(values: list[float], world: int, device: str = "cpu") -> list[float]:
    """Element-wise sum of ``values`` over the ranks (the values themselves when alone)."""
    if world == 1:
        return list(values)
    t = torch.tensor(values, dtype=torch.float64, device=device)
    dist.all_reduce(t)
    return t.tolist()


def all_max(value: int, world: int, device: str = "cpu") -> int:
    """The largest ``value`` over the ranks."""
    if world == 1:
        return value
    t = torch.tensor([value], dtype=torch.int64, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return int(t.item())
