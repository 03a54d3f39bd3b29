"""What a run asks of its Ray cluster: CPUs, GPUs and memory, from its RunConfig alone.

The queue (``runs.queue``) dispatches a run only when the cluster can hold this much next
to the runs already dispatched there. CPUs and GPUs are what the run's actors ask Ray for
(``umbra.rollout.instance.start_instances``, ``umbra.training.group.TrainerGroup.start``;
tests/unit/test_run_demand.py keeps the numbers here equal to theirs). The actors ask
Ray for no memory, so memory is estimated: the engines and the trainer run float32, an
engine holds the weights and (on a CPU cluster) its KV cache, the trainer the policy, the
reference copy, the gradients, AdamW's two moments and (on a CPU cluster) one micro-batch's
activations.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from umbra.config import RunConfig

GIB = 2**30
# Ray's num_cpus of one rollout instance (start_instances) and of the trainer actor (TrainerGroup.start).
ROLLOUT_INSTANCE_CPUS = 0.5
TRAINER_CPUS = 1.0
# On a cluster with GPUs every rollout instance takes one (start_instances), and so does every trainer rank.
ROLLOUT_INSTANCE_GPUS = 1.0
# Resident memory besides weights and KV cache, measured roughly on the CPU stack: a vLLM
# engine's processes (torch, the engine core), the trainer's torch and activations, the
# job's driver (tokenizer, data set, the rollout's bookkeeping).
ENGINE_OVERHEAD_BYTES = int(1.5 * GIB)
TRAINER_OVERHEAD_BYTES = 1 * GIB
DRIVER_BYTES = GIB // 2
FLOAT32_BYTES = 4
# Parameters of the named models (umbra.models.registry), known without preparing them.
NAMED_MODEL_PARAMETERS = {"tiny": 300_000, "smollm2": 135_000_000}
# (vocab, hidden, layers) of the named models, for the activation estimate.
NAMED_MODEL_SHAPES = {"tiny": (512, 128, 2), "smollm2": (49_152, 576, 30)}
# Activation bytes per token of a training micro-batch (ours, fitted): float32 logits and their
# copies and gradients (~20 bytes per vocabulary entry) and each layer's saved activations
# (~100 bytes per hidden unit). `umbra bench train --model smollm2 --sequences 64
# --prompt-tokens 64 --response-tokens 96 --kl-coef 0` peaked at 4.1 / 5.3 / 8.2 / 13.4 GiB
# with --micro-tokens 512 / 1,024 / 2,048 / 4,096; this estimate gives 4.3 / 5.6 / 8.1 / 13.3.
ACTIVATION_BYTES_PER_VOCAB = 20
ACTIVATION_BYTES_PER_HIDDEN_LAYER = 100


@dataclass(frozen=True)
class Resources:
    """An amount of Ray's ``CPU``, ``GPU`` and ``memory`` (bytes) resources."""

    cpu: float = 0.0
    gpu: float = 0.0
    memory: float = 0.0

    @classmethod
    def from_ray(cls, resources: dict) -> "Resources":
        """From a Ray resource dict (``{"CPU": 8.0, "memory": 1.7e10, ...}``; missing keys are 0)."""
        return cls(float(resources.get("CPU", 0)), float(resources.get("GPU", 0)), float(resources.get("memory", 0)))

    def __add__(self, other: "Resources") -> "Resources":
        return Resources(self.cpu + other.cpu, self.gpu + other.gpu, self.memory + other.memory)

    def __sub__(self, other: "Resources") -> "Resources":
        return Resources(self.cpu - other.cpu, self.gpu - other.gpu, self.memory - other.memory)

    def fits_in(self, free: "Resources") -> bool:
        """Whether this much fits in ``free`` (each resource on its own; a small tolerance
        for float sums)."""
        eps = 1e-6
        return self.cpu <= free.cpu + eps and self.gpu <= free.gpu + eps and self.memory <= free.memory + eps

    def __str__(self) -> str:
        gpu = f", {self.gpu:g} GPU" if self.gpu else ""
        return f"{self.cpu:g} CPU{gpu}, {self.memory / GIB:.1f} GiB memory"


def parameter_count(hf_config: dict) -> int:
    """Parameters of a decoder-only transformer from its Hugging Face ``config.json``
    (embeddings, attention with grouped KV heads, a gated MLP; norms are negligible).

    Raises KeyError / TypeError / ValueError for a config without the usual fields.
    """
    hidden, layers, vocab = int(hf_config["hidden_size"]), int(hf_config["num_hidden_layers"]), int(hf_config["vocab_size"])
    heads = int(hf_config["num_attention_heads"])
    kv_heads = int(hf_config.get("num_key_value_heads") or heads)
    head_dim = int(hf_config.get("head_dim") or hidden // max(heads, 1))
    inner = int(hf_config.get("intermediate_size") or 4 * hidden)
    if min(hidden, layers, vocab, heads, kv_heads, head_dim, inner) < 1:
        raise ValueError("a model config's sizes are whole numbers >= 1")
    attention = 2 * hidden * heads * head_dim + 2 * hidden * kv_heads * head_dim
    embeddings = vocab * hidden * (1 if hf_config.get("tie_word_embeddings", True) else 2)
    return embeddings + layers * (attention + 3 * hidden * inner)


@dataclass(frozen=True)
class ModelSize:
    """What the estimate needs of a model: its float32 weights and the activation bytes per
    token of a training micro-batch."""

    weights_bytes: int
    activation_bytes_per_token: int


def activation_bytes_per_token(vocab: int, hidden: int, layers: int) -> int:
    """Training activation bytes per micro-batch token (see ACTIVATION_BYTES_PER_*)."""
    return ACTIVATION_BYTES_PER_VOCAB * vocab + ACTIVATION_BYTES_PER_HIDDEN_LAYER * hidden * layers


def _folder_config(model: str) -> dict | None:
    """The model folder's config.json, or None when it cannot be read."""
    try:
        cfg = json.loads((Path(model) / "config.json").read_text())
    except (OSError, ValueError):
        return None
    return cfg if isinstance(cfg, dict) else None


def model_size(model: str) -> ModelSize:
    """:func:`model_weights_bytes` and the activation bytes per token, from the named model's
    known size and shape or the folder's config.json, read once (a config that cannot be
    counted counts as the largest named model: the queue must not hang on it)."""
    cfg = None if model in NAMED_MODEL_PARAMETERS else _folder_config(model)
    return ModelSize(_weights_bytes(model, cfg), activation_bytes_per_token(*_shape(model, cfg)))


def _weights_bytes(model: str, cfg: dict | None) -> int:
    if model in NAMED_MODEL_PARAMETERS:
        return NAMED_MODEL_PARAMETERS[model] * FLOAT32_BYTES
    try:
        return parameter_count(cfg) * FLOAT32_BYTES
    except (ValueError, KeyError, TypeError, ArithmeticError):  # None, int(inf): OverflowError
        return max(NAMED_MODEL_PARAMETERS.values()) * FLOAT32_BYTES


def _shape(model: str, cfg: dict | None) -> tuple[int, int, int]:
    if model in NAMED_MODEL_SHAPES:
        return NAMED_MODEL_SHAPES[model]
    try:
        shape = (int(cfg["vocab_size"]), int(cfg["hidden_size"]), int(cfg["num_hidden_layers"]))
        if min(shape) >= 1:
            return shape
    except (ValueError, KeyError, TypeError, ArithmeticError):
        pass
    return NAMED_MODEL_SHAPES["smollm2"]


def model_weights_bytes(model: str) -> int:
    """Bytes of ``model``'s float32 weights: a named model's known size, else counted from
    the folder's config.json (a model whose config cannot be read counts as the largest
    named one: the queue must not hang on it)."""
    return model_size(model).weights_bytes


def run_demand(config: RunConfig, size: ModelSize, gpu_cluster: bool) -> Resources:
    """What a run of ``config`` holds while it runs, on a cluster with GPUs or without.

    Pure: ``size`` is the model's float32 size and activation bytes per token (:func:`model_size`).
    A rollout instance: ``ROLLOUT_INSTANCE_CPUS`` (and a GPU on a GPU cluster), the
    weights, the engine's overhead and, on a CPU cluster, ``kv_cache_gib`` of KV cache in
    host memory. The trainer: ``TRAINER_CPUS``, the policy, gradients and AdamW's two
    moments (4x the weights), a reference copy when ``kl_coef`` > 0, spread over
    ``trainer_ranks`` (each its ``TRAINER_CPUS``, and a GPU on a GPU cluster), and on a CPU
    cluster each rank's activations for ``train_micro_tokens`` tokens. The job's driver
    asks for no CPU (a Ray job's entrypoint defaults to 0) but holds some memory.
    """
    n = config.rollout_instances
    weights_bytes = size.weights_bytes
    kv = 0 if gpu_cluster else config.kv_cache_gib * GIB
    instance_memory = weights_bytes + kv + ENGINE_OVERHEAD_BYTES
    ranks = config.trainer_ranks  # FSDP2 shards the state over them; rank 0 gathers the full weights to sync
    trainer_memory = (weights_bytes * (4 + (1 if config.kl_coef > 0 else 0)) + ranks * TRAINER_OVERHEAD_BYTES
                      + (weights_bytes if ranks > 1 else 0))
    if not gpu_cluster:  # on a GPU they are in device memory
        trainer_memory += ranks * config.train_micro_tokens * size.activation_bytes_per_token
    return Resources(cpu=n * ROLLOUT_INSTANCE_CPUS + ranks * TRAINER_CPUS,
                     gpu=(n * ROLLOUT_INSTANCE_GPUS + ranks) if gpu_cluster else 0.0,
                     memory=float(n * instance_memory + trainer_memory + DRIVER_BYTES))
