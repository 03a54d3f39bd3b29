"""Start the three parts of a run (data source, rollout manager, trainer group) from its config."""
from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from umbra.config import PROMPT_BUDGET, RunConfig
from umbra.data.holdout import train_and_val
from umbra.data.source import DataSource, PromptItem, prompt_pool
from umbra.models.registry import NAMED_MODELS, context_length, resolve_model
from umbra.rollout.manager import RolloutManager, RolloutShape
from umbra.rollout.policies import make_policy
from umbra.training.group import TrainerGroup, placement_error

log = logging.getLogger("umbra.job")


@dataclass
class RunParts:
    """What the loop joins: the tokenizer (rewards decode with it) and the three parts;
    ``val_items``/``val_policy``: the validation prompts and their own rollout policy object."""

    tokenizer: object
    data: DataSource
    rollout: RolloutManager
    trainers: TrainerGroup
    val_items: list[PromptItem]
    val_policy: object = None


def training_data(config: RunConfig, tokenizer) -> tuple[DataSource, list[PromptItem]]:
    """The run's data source (its first ``train_max_samples`` problems when set, after the
    validation hold-out) and its validation prompts (none unless ``val_every``).

    Raises ValueError / DatasetError for unusable data.
    """
    train, val = train_and_val(config.dataset, config.seed, config.val_dataset, config.val_fraction)
    if config.train_max_samples:
        train = train[:config.train_max_samples]
    data = DataSource.from_problems(train, tokenizer, PROMPT_BUDGET, config.prompts_per_iteration, config.seed,
                                    config.dataset)
    val_items = prompt_pool(val, tokenizer, PROMPT_BUDGET) if config.val_every > 0 else []
    if config.val_every > 0 and not val_items:
        raise ValueError(f"no validation prompt fits the prompt budget of {PROMPT_BUDGET} tokens")
    return data, val_items


def start_parts(config: RunConfig) -> RunParts:
    """Load the data set, start the rollout instances and the trainer for ``config``.

    Raises ValueError / DatasetError for unusable data, ``ray.exceptions.RayActorError``
    when an engine or the trainer cannot start.
    """
    from transformers import AutoTokenizer

    model_path = str(resolve_model(config.model))
    if config.model in NAMED_MODELS and not (Path(model_path) / "config.json").is_file():
        # not transformers' "Repo id must be in the form ..." for a folder that is not there
        raise ValueError(f"model {config.model!r} is not prepared at {model_path}: run `umbra prepare-model "
                         f"{config.model}` on the cluster's machines (UMBRA_MODEL_DIR names the folder)")
    tokenizer = AutoTokenizer.from_pretrained(model_path)
    data, val_items = training_data(config, tokenizer)
    log.info("loaded %d problems from %s (%d for validation); starting %d rollout instances", len(data.items),
             config.dataset, len(val_items), config.rollout_instances)
    longest = max([data.longest_prompt] + [len(p.token_ids) for p in val_items])
    shape = RolloutShape.fit(model_path, context_length(config.model), longest, config.group_size,
                             config.max_tokens, config.temperature, config.kv_cache_gib, config.max_num_seqs)
    import ray

    if why := placement_error(config.trainer_ranks, config.rollout_instances, ray.cluster_resources()):
        raise ValueError(why)  # before any engine starts: Ray would wait for the placement forever
    rollout = RolloutManager.start(model_path, config.rollout_instances, shape, config.seed,
                                   speculation="grouped" if config.spec_decoding else None)
    rollout.spec_history = config.spec_history
    trainers = TrainerGroup.start(model_path, config.learning_rate, config.kl_coef, config.clip_eps,
                                  config.train_minibatches, config.seed, ranks=config.trainer_ranks,
                                  micro_tokens=config.train_micro_tokens,
                                  gradient_checkpointing=config.gradient_checkpointing,
                                  algo={"temperature": config.temperature, "loss_agg_mode": config.loss_agg_mode,
                                        "horizon": config.max_tokens})
    rollout.policy = make_policy(config.rollout_policy,
                                 **config.policy_options(kv_block_tokens=rollout.kv_block_tokens()))
    val_policy = make_policy(config.rollout_policy, **config.policy_options(
        kv_block_tokens=rollout.kv_block_tokens())) if val_items else None
    return RunParts(tokenizer, data, rollout, trainers, val_items, val_policy)
