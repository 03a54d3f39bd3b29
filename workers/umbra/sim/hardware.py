"""Engine numbers of the simulator's presets, derived from public facts rather than tuned to
the Seer paper's results (ours: the paper gives its hardware, not these numbers).

Facts used (each from the named public source):
- H800 SXM (NVIDIA H100 SXM datasheet; the H800 differs in NVLink only): 80 GB HBM3 at
  3.35 TB/s, 989 TFLOP/s dense BF16.
- vLLM: ``gpu_memory_utilization`` 0.9 by default; ``max_num_seqs`` 256 per engine.
- Model configs (``config.json`` on Hugging Face) and model cards:
  Moonlight-16B-A3B (moonshotai): DeepSeek-V3 layout, 27 layers, MLA with
  ``kv_lora_rank`` 512 + ``qk_rope_head_dim`` 64, 16B parameters (3B active), BF16.
  Qwen2-VL-72B-Instruct (Qwen): 80 layers, 8 KV heads of 128, 72B parameters, BF16.
  Kimi-K2-Instruct (moonshotai): 61 layers, MLA 512 + 64, 1.04T parameters (32B active),
  FP8 weights.
- Seer Table 3: Moonlight on 1 GPU per instance, Qwen2-VL-72B on 8 (tensor parallel),
  Kimi-K2 on 32 (expert parallel; attention data parallel, so each of the 32 ranks holds
  its own requests' KV).

Derivation per instance: KV bytes per token per GPU (MLA: layers x 576 x 2 B, replicated;
GQA: 2 x layers x KV heads per GPU x 128 x 2 B); KV memory per GPU = 0.9 x 80 GB - weights
per GPU - ``ACTIVATIONS_GB``; KV tokens = that / bytes per token, times the ranks holding
distinct KV. Decode step (memory bound): ``c0`` = weight bytes per GPU / bandwidth (a large
batch touches every expert); ``c_seq`` = 2 x active parameters / (GPUs x peak x ``MFU``);
``c_ctx`` = KV bytes per context token / bandwidth / ranks holding distinct KV; a prefill
token costs what a decode row does (``c_prefill = c_seq``).
"""
from __future__ import annotations

from dataclasses import dataclass

from umbra.sim.step_model import StepModel

HBM_GB, BANDWIDTH, PEAK_FLOPS = 80.0, 3.35e12, 989e12  # H800 SXM
MEMORY_UTILIZATION = 0.9  # vLLM's default
ACTIVATIONS_GB = 4.0      # ours: activations, CUDA graphs and the sampler per GPU
MFU = 0.4                 # ours: share of peak a decode row's matmuls reach
MAX_NUM_SEQS = 256        # vLLM's default per engine


@dataclass(frozen=True)
class Engine:
    """One rollout instance: ``gpus`` H800s holding ``weight_bytes`` of weights in all,
    ``kv_bytes_per_token`` of KV per token on each GPU that holds it, ``kv_ranks`` GPUs
    holding distinct requests' KV (1 with tensor parallelism), ``active_params`` per token."""

    gpus: int
    weight_bytes: float
    kv_bytes_per_token: float
    kv_ranks: int
    active_params: float

    @property
    def kv_tokens(self) -> int:
        per_gpu = (MEMORY_UTILIZATION * HBM_GB - self.weight_bytes / self.gpus / 1e9 - ACTIVATIONS_GB) * 1e9
        return int(per_gpu / self.kv_bytes_per_token) * self.kv_ranks

    @property
    def max_batch(self) -> int:
        return MAX_NUM_SEQS * self.kv_ranks

    @property
    def step(self) -> StepModel:
        c_seq = 2 * self.active_params / (self.gpus * PEAK_FLOPS * MFU)
        return StepModel(c0=self.weight_bytes / self.gpus / BANDWIDTH, c_seq=c_seq,
                         c_ctx=self.kv_bytes_per_token / BANDWIDTH / self.kv_ranks, c_prefill=c_seq)


def mla_bytes(layers: int) -> float:
    return layers * (512 + 64) * 2.0


ENGINES = {
    "moonlight": Engine(gpus=1, weight_bytes=16e9 * 2, kv_bytes_per_token=mla_bytes(27), kv_ranks=1,
                        active_params=3e9),
    "qwen2-vl-72b": Engine(gpus=8, weight_bytes=72e9 * 2, kv_bytes_per_token=2 * 80 * 1 * 128 * 2.0, kv_ranks=1,
                           active_params=72e9),
    "kimi-k2": Engine(gpus=32, weight_bytes=1.04e12, kv_bytes_per_token=mla_bytes(61), kv_ranks=32,
                      active_params=32e9),
}
