"""Validation between iterations (ours; veRL's ``trainer.test_freq``): the held-out prompts
sampled on the rollout instances, scored by the run's reward, logged as ``val/*`` metrics."""
from __future__ import annotations

import dataclasses
from typing import Callable

from umbra.data.source import PromptItem
from umbra.rewards.score import VAL_ERRORS

# Sampling seeds of validation rollouts: apart from the training rollouts' (seed * 7919 + it).
VAL_SEED_OFFSET = 104_729


class Validator:
    """Samples ``samples`` responses per validation prompt at ``temperature`` (0 = greedy)
    every ``every`` iterations and at the last one; with ``before_train`` (veRL's
    ``val_before_train``) also on the initial weights, logged at step 0 in iteration 0's place
    (iteration 0 is then not validated after its update, so a step holds one value).

    ``score(batch, problems, errors_metric)`` is the run's reward path (the one the training
    batch goes through): it sets each sample's ``reward`` and returns its metrics, the errors
    counted as ``errors_metric`` (``val/reward_errors`` here, so training's ``reward/errors``
    counts training's only). ``policy`` is a rollout policy object of
    its own, so validation prompts do not enter the training policy's state (length history).
    """

    def __init__(self, items: list[PromptItem], every: int, samples: int, temperature: float,
                 iterations: int, seed: int, policy, score: Callable, before_train: bool = False):
        self.items, self.every, self.samples, self.temperature = items, every, samples, temperature
        self.iterations, self.seed, self.policy, self.score = iterations, seed, policy, score
        self.before_train = before_train

    def due_before(self, first: int) -> bool:
        """Whether to validate the initial weights before iteration ``first`` (not on a resume)."""
        return bool(self.items) and self.before_train and first == 0

    def due(self, iteration: int) -> bool:
        """Whether to validate after iteration ``iteration`` (counted from 0)."""
        if not self.items or self.every <= 0 or (iteration == 0 and self.before_train):
            return False
        return (iteration + 1) % self.every == 0 or iteration == self.iterations - 1

    def run(self, rollout, iteration: int) -> tuple[dict[str, float], list[str]]:
        """Validate the instances' current weights: ``(metrics, notes)``; ``notes`` are the
        rollout's events (an instance replaced during validation; the reward's error notes wait
        in the run's Scorer like training's)."""
        shape = dataclasses.replace(rollout.shape, group_size=self.samples, temperature=self.temperature)
        batch = rollout.generate(iteration, [p.token_ids for p in self.items],
                                 seed=self.seed * 7919 + iteration + VAL_SEED_OFFSET, policy=self.policy, shape=shape)
        scored = self.score(batch, [p.problem for p in self.items], VAL_ERRORS)
        return {**validation_metrics(batch.samples), VAL_ERRORS: scored[VAL_ERRORS]}, batch.events


def validation_metrics(samples) -> dict[str, float]:
    """``val/accuracy`` (share of responses with reward > 0.5), ``val/reward_mean`` and
    ``val/response_len/mean`` (tokens) over the validation samples."""
    rewards = [float(s.reward) for s in samples]
    n = max(len(samples), 1)
    return {"val/accuracy": sum(r > 0.5 for r in rewards) / n,
            "val/reward_mean": sum(rewards) / n,
            "val/response_len/mean": sum(len(s.response_token_ids) for s in samples) / n}
