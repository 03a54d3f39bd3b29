"""The run-config schema: one pydantic model used by the web form, the API and the job.

Errors are raised as ``pydantic.ValidationError``; the platform turns them into
form field errors, the job refuses to start on them.
"""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from umbra.data.files import load_file
from umbra.data.registry import NAMED_DATASETS, check_dataset
from umbra.models.registry import context_length
from umbra.rewards.custom import check_reward

RolloutPolicy = Literal["static-group", "verl", "request-lb", "seer"]
# Tokens reserved for the prompt; the job drops problems whose prompt is longer.
PROMPT_BUDGET = 512
# Requests per iteration: bounds the per-iteration trace the platform accepts.
MAX_REQUESTS = 16384


class RunConfig(BaseModel):
    """Everything a run needs; immutable once stored.

    Units: ``max_tokens`` in tokens per response, ``kv_cache_gib`` in GiB of KV
    cache per rollout instance, ``learning_rate`` per optimizer step.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)  # "nan" reads "finite number", not "<= 2"

    model: str = Field("smollm2", max_length=1000, description="'tiny', 'smollm2' or a path to a Hugging Face model folder")
    dataset: str = Field("arith", max_length=1000, description=(
        "'arith', 'arith-easy' or 'countdown' (generated) or the path of a JSONL or Parquet file or a datasets save_to_disk folder, "
        "in veRL's, TRL's or GSM8K's row shape"))
    val_dataset: str = Field("", max_length=1000, description=(
        "validation set: a path like dataset's (or 'arith'); empty = none or val_fraction"))
    train_max_samples: int = Field(0, ge=0, le=10_000_000, description=(
        "train on the first N problems of the data set only (after the validation hold-out; veRL's name); "
        "0 = all. A small set makes prompts come back every few iterations"))
    val_fraction: float = Field(0.0, ge=0.0, le=0.5, description=(
        "validation set: this share of the training file held out (fixed by the seed); 0 = none"))
    val_every: int = Field(0, ge=0, le=100000, description=(
        "validate every N iterations (after the weight sync) and at the last one; 0 = never"))
    val_before_train: bool = Field(False, description=(
        "also validate the initial weights, logged at step 0 (veRL's val_before_train)"))
    val_samples: int = Field(1, ge=1, le=64, description="validation responses per prompt")
    val_temperature: float = Field(0.0, ge=0.0, le=2.0, description="validation sampling temperature (0 = greedy)")
    reward: str = Field("math", max_length=1000, description=(
        "'math' (math-verify on the final answer), 'gsm8k-strict' (veRL's strict '#### <number>'), "
        "'exact' (normalised string match), or 'file.py:function' in veRL's compute_score signature, "
        "from a folder the operator lists in UMBRA_REWARD_DIRS"))
    reward_timeout_s: float = Field(10.0, gt=0.0, le=600.0, description=(
        "per-call reward time limit, seconds; a call past it scores 0 (counted in reward/errors)"))
    prompts_per_iteration: int = Field(16, ge=1, le=4096, description="prompts (groups) per iteration")
    group_size: int = Field(8, ge=2, le=64, description="GRPO group size G: responses per prompt")
    max_tokens: int = Field(256, ge=1, le=131072, description="max generated tokens per response")
    temperature: float = Field(1.0, gt=0.0, le=2.0)
    iterations: int = Field(3, ge=1, le=100000)
    learning_rate: float = Field(1e-6, gt=0.0, le=1.0)
    kl_coef: float = Field(0.01, ge=0.0, le=100.0, description="weight of the KL penalty to the initial policy")
    clip_eps: float = Field(0.2, gt=0.0, le=1.0, description="PPO/GRPO ratio clip range")
    adv_estimator: Literal["grpo", "dr_grpo", "rloo"] = Field("grpo", description=(
        "veRL's names: grpo ((r - group mean) / group sample std), dr_grpo (r - group mean, "
        "Dr. GRPO), rloo (r - mean of the other responses of the group)"))
    norm_adv_by_std: bool = Field(True, description=(
        "grpo: divide by the group's sample std (unbiased, as veRL and TRL); off = r - group mean"))
    loss_agg_mode: Literal["token-mean", "seq-mean-token-mean", "seq-mean-token-sum-norm"] = Field(
        "token-mean", description=(
            "veRL's names: token-mean (every response token weighs the same, DAPO), seq-mean-token-mean "
            "(each response weighs the same, DeepSeekMath), seq-mean-token-sum-norm (token sum / max_tokens, "
            "Dr. GRPO)"))
    train_minibatches: int = Field(1, ge=1, le=64, description="optimizer steps per iteration")
    trainer_ranks: int = Field(1, ge=1, le=64, description=(
        "trainer ranks (Ray actors, one GPU each on a GPU cluster); more than 1 shards the policy with FSDP2"))
    train_micro_tokens: int = Field(1024, ge=16, le=1048576, description=(
        "token budget of one forward/backward micro-batch (padded sequences x length); 1,024 suits CPU "
        "ranks (faster and less than half the memory of 4,096 on SmolLM2-135M); on GPUs larger is faster "
        "(veRL's default: 16,384)"))
    gradient_checkpointing: bool = Field(False, description="recompute activations in backward (less memory)")
    rollout_policy: RolloutPolicy = Field("static-group", description=(
        "verl (veRL as it runs: each instance's share submitted at once, vLLM preempts), "
        "static-group (the same split, capped so nothing is preempted), request-lb, or seer; "
        "oracle-lfs needs true lengths and lives in `umbra bench rollout`"))
    chunk_tokens: int = Field(64, ge=1, le=65536, description="seer: tokens per chunk (divided rollout)")
    seer_divided: bool = Field(True, description="seer: divided rollout (chunks + rebalancing)")
    seer_context_aware: bool = Field(True, description="seer: context-aware scheduling (Alg. 2)")
    seer_length_history: bool = Field(False, description=(
        "seer: a prompt seen in earlier iterations starts its group's length estimate at its "
        "longest earlier response (ours, beyond the paper)"))
    spec_decoding: bool = Field(False, description="grouped speculative decoding (suffix drafts, Alg. 1)")
    spec_history: bool = Field(True, description=(
        "grouped speculation: a returning prompt's group also drafts from its earlier responses (the "
        "8 most recent, at most 16 iterations old; ours, beyond the paper)"))
    rollout_instances: int = Field(2, ge=1, le=64, description="vLLM rollout instances (Ray actors)")
    kv_cache_gib: int = Field(1, ge=1, le=1024, description="KV cache budget per instance, GiB")
    max_num_seqs: int = Field(64, ge=1, le=4096, description="max concurrent sequences per instance")
    seed: int = Field(0, ge=0, le=2**31 - 1)
    checkpoint_every: int = Field(10, ge=0, le=100000, description=(
        "save a checkpoint (weights, optimizer, sampler state) every N iterations; Resume restarts "
        "from the latest; 0 = never (Resume then starts over)"))
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

    @field_validator("val_dataset")
    @classmethod
    def _val_dataset_known(cls, v: str) -> str:
        if v:
            check_dataset(v)
        return v

    @field_validator("reward")
    @classmethod
    def _reward_known(cls, v: str) -> str:
        check_reward(v)
        return v

    @field_validator("val_fraction")
    @classmethod
    def _one_validation_set(cls, v: float, info: ValidationInfo) -> float:
        if v > 0 and info.data.get("val_dataset"):
            raise ValueError("give val_dataset or val_fraction, not both")
        if v > 0 and (dataset := info.data.get("dataset")) and dataset not in NAMED_DATASETS:
            rows = len(load_file(dataset).problems)  # read again: found at submission, not at the run's start
            if rows < 2:
                raise ValueError(f"val_fraction needs at least 2 problems in the data set, it has {rows}")
        return v

    @field_validator("val_every", "val_before_train")
    @classmethod
    def _validation_set_given(cls, v: int, info: ValidationInfo) -> int:
        if v > 0 and not info.data.get("val_dataset") and not info.data.get("val_fraction") \
                and "val_dataset" in info.data and "val_fraction" in info.data:
            raise ValueError("validation needs a validation set: set val_dataset or val_fraction")
        return v

    @field_validator("cluster")
    @classmethod
    def _no_credentials(cls, v: str) -> str:
        # Run configs are shown to every reader of the run: a password must never be stored in one.
        if "@" in v:
            raise ValueError("must not contain credentials (user:password@); the platform's "
                             "workers authenticate to Ray through their environment (RAY_AUTH_TOKEN)")
        return v

    @field_validator("group_size")
    @classmethod
    def _requests_bounded(cls, v: int, info: ValidationInfo) -> int:
        prompts = info.data.get("prompts_per_iteration")
        if prompts is not None and prompts * v > MAX_REQUESTS:
            raise ValueError(f"prompts_per_iteration x group_size = {prompts * v} requests; at most {MAX_REQUESTS}")
        return v

    @field_validator("iterations")
    @classmethod
    def _one_validation_per_step(cls, v: int, info: ValidationInfo) -> int:
        # val_before_train logs at step 0, the step a 1-iteration run's last validation (after its
        # update) takes: one of the two would be lost.
        if v == 1 and info.data.get("val_before_train") and info.data.get("val_every"):
            raise ValueError("a run of 1 iteration logs both val_before_train's validation and its last one at "
                             "step 0: give iterations >= 2, or val_every: 0 to validate the initial weights only")
        return v

    @field_validator("max_tokens")
    @classmethod
    def _fits_context(cls, v: int, info: ValidationInfo) -> int:
        model = info.data.get("model")
        if model is None:  # the model field failed; its own error says why
            return v
        ctx = context_length(model)
        limit = ctx - PROMPT_BUDGET
        if v > limit:
            raise ValueError(f"max_tokens {v} exceeds what model '{model}' allows "
                             f"({limit} = context {ctx} - {PROMPT_BUDGET} prompt tokens)")
        return v

    def policy_options(self, kv_block_tokens: int = 1) -> dict:
        """Keyword options of the rollout policy object for this config; ``kv_block_tokens``
        is the engines' KV block size (seer aligns chunk ends to it)."""
        if self.rollout_policy == "seer":
            return {"chunk_tokens": self.chunk_tokens, "divided": self.seer_divided,
                    "context_aware": self.seer_context_aware, "kv_block_tokens": kv_block_tokens,
                    "length_history": self.seer_length_history}
        return {}
