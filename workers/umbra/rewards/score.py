"""Score a rollout batch: each sample's reward from its decoded response and its group's problem."""
from __future__ import annotations

from umbra.rewards.math_answer import math_reward


def score_batch(batch, problems: list, tokenizer) -> dict[str, float]:
    """Set ``reward`` on every sample of ``batch`` (a RolloutBatch) with :func:`math_reward`
    against ``problems[group_id].answer``; returns ``reward/mean`` and ``reward/accuracy``."""
    texts = tokenizer.batch_decode([s.response_token_ids for s in batch.samples], skip_special_tokens=True)
    for s, text in zip(batch.samples, texts):
        s.reward = math_reward(text, problems[s.group_id].answer)
    rewards = [s.reward for s in batch.samples]
    return {"reward/mean": sum(rewards) / len(rewards),
            "reward/accuracy": sum(r > 0.5 for r in rewards) / len(rewards)}
