"""The run-config schema: one pydantic model used by the web form, the API and the job.

Errors are raised as ``pydantic.ValidationError``; the platform turns them into
form field errors, the job refuses to start on them.
"""
from __future__ import annotations

import json
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from umbra.data.registry import check_dataset
from umbra.models.registry import context_length

RolloutPolicy = Literal["static-group"]
ROLLOUT_POLICIES: tuple[str, ...] = ("static-group",)


class RunConfig(BaseModel):
    """Everything a run needs; immutable once stored.

    Units: ``max_tokens`` in tokens per response, ``kv_cache_gib`` in GiB of KV
    cache per rollout instance, ``learning_rate`` per optimizer step.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = Field("smollm2", description="'tiny', 'smollm2' or a path to a Hugging Face model folder")
    dataset: str = Field("arith", description="'arith' (generated) or a path to a GSM8K-style JSONL file")
    prompts_per_iteration: int = Field(16, ge=1, le=4096, description="prompts (groups) per iteration")
    group_size: int = Field(8, ge=2, le=64, description="GRPO group size G: responses per prompt")
    max_tokens: int = Field(256, ge=1, le=131072, description="max generated tokens per response")
    temperature: float = Field(1.0, gt=0.0, le=2.0)
    iterations: int = Field(3, ge=1, le=100000)
    learning_rate: float = Field(1e-6, gt=0.0, le=1.0)
    kl_coef: float = Field(0.01, ge=0.0, le=100.0, description="weight of the KL penalty to the initial policy")
    clip_eps: float = Field(0.2, gt=0.0, le=1.0, description="PPO/GRPO ratio clip range")
    train_minibatches: int = Field(1, ge=1, le=64, description="optimizer steps per iteration")
    rollout_policy: RolloutPolicy = "static-group"
    rollout_instances: int = Field(2, ge=1, le=64, description="vLLM rollout instances (Ray actors)")
    kv_cache_gib: int = Field(1, ge=1, le=1024, description="KV cache budget per instance, GiB")
    max_num_seqs: int = Field(64, ge=1, le=4096, description="max concurrent sequences per instance")
    seed: int = Field(0, ge=0, le=2**31 - 1)
    cluster: str = Field("", max_length=500, description="Ray address; empty = the platform's default")

    @field_validator("model")
    @classmethod
    def _model_known(cls, v: str) -> str:
        context_length(v)  # raises ValueError with a message for unknown models
        return v

    @field_validator("dataset")
    @classmethod
    def _dataset_known(cls, v: str) -> str:
        check_dataset(v)
        return v

    @model_validator(mode="after")
    def _fits_context(self) -> "RunConfig":
        ctx = context_length(self.model)
        # Leave room for the prompt: the longest GSM8K chat prompt is < 512 tokens.
        limit = ctx - 512
        if self.max_tokens > limit:
            raise ValueError(f"max_tokens {self.max_tokens} exceeds what model '{self.model}' allows "
                             f"({limit} = context {ctx} - 512 prompt tokens)")
        return self

    def to_json(self) -> str:
        """Canonical JSON (sorted keys) of the config."""
        return json.dumps(self.model_dump(), sort_keys=True)
