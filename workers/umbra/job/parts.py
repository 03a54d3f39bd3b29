"""Start the three parts of a run (data source, rollout manager, trainer group) from its config."""
from __future__ import annotations

import logging
from dataclasses import dataclass

from umbra.config import PROMPT_BUDGET, RunConfig
from umbra.data.source import DataSource
from umbra.models.registry import context_length, resolve_model
from umbra.rollout.manager import RolloutManager, RolloutShape
from umbra.rollout.policies import make_policy
from umbra.training.group import TrainerGroup

log = logging.getLogger("umbra.job")


@dataclass
class RunParts:
    """What the loop joins: the tokenizer (rewards decode with it) and the three parts."""

    tokenizer: object
    data: DataSource
    rollout: RolloutManager
    trainers: TrainerGroup


def start_parts(config: RunConfig) -> RunParts:
    """Load the data set, start the rollout instances and the trainer for ``config``.

    Raises ValueError / DatasetError for unusable data, ``ray.exceptions.RayActorError``
    when an engine or the trainer cannot start.
    """
    from transformers import AutoTokenizer

    model_path = str(resolve_model(config.model))
    tokenizer = AutoTokenizer.from_pretrained(model_path)
    data = DataSource.from_dataset(config.dataset, tokenizer, PROMPT_BUDGET, config.prompts_per_iteration,
                                   config.seed)
    log.info("loaded %d problems from %s; starting %d rollout instances", len(data.items), config.dataset,
             config.rollout_instances)
    shape = RolloutShape.fit(model_path, context_length(config.model), data.longest_prompt, config.group_size,
                             config.max_tokens, config.temperature, config.kv_cache_gib, config.max_num_seqs)
    rollout = RolloutManager.start(model_path, config.rollout_instances, shape, config.seed,
                                   speculative=config.spec_decoding)
    trainers = TrainerGroup.start(model_path, config.learning_rate, config.kl_coef, config.clip_eps,
                                  config.train_minibatches, config.seed)
    rollout.policy = make_policy(config.rollout_policy,
                                 **config.policy_options(kv_block_tokens=rollout.kv_block_tokens()))
    return RunParts(tokenizer, data, rollout, trainers)
