"""The iteration loop of one run, run by the Ray job's driver (no Django here):
generate, score, train, sync, report — the three parts are started by ``umbra.job.parts``."""
from __future__ import annotations

import logging
import time

from umbra.config import RunConfig
from umbra.job.checkpoint import CheckpointDir, Checkpointer
from umbra.job.parts import start_parts
from umbra.job.validation import Validator
from umbra.rewards.score import TRAIN_ERRORS, Scorer
from umbra.telemetry.system import SystemSampler, ask_actors
from umbra.training.grpo import assign_advantages

log = logging.getLogger("umbra.job")


def system_actors(trainers, rollout) -> list[tuple[str, object]]:
    """The actors whose processes the System charts show, by name: ``trainer-<rank>`` and
    ``rollout-<instance>`` (a replacement keeps its predecessor's name)."""
    return ([(f"trainer-{r}", a) for r, a in enumerate(trainers.actors)]
            + [(f"rollout-{i}", h) for i, h in enumerate(rollout.instances)])


def run(config: RunConfig, telemetry, checkpoints: CheckpointDir | None = None) -> None:
    """Run ``config.iterations`` GRPO iterations, sending metrics via ``telemetry``.

    With ``checkpoints`` it continues after the latest checkpoint there (if any) and saves one
    every ``config.checkpoint_every`` iterations and after the last one, once that iteration's
    metrics were delivered.
    A rollout instance that dies is survived (its chunks run elsewhere; a replacement takes
    its place). Raises ``umbra.rollout.manager.OffPolicyError`` if an instance sampled with
    stale weights; other Ray errors propagate (the job fails and the platform records why).
    """
    parts = start_parts(config)
    rollout, trainers, data = parts.rollout, parts.trainers, parts.data
    checkpointer, notes, first = Checkpointer(checkpoints, config.checkpoint_every, config.iterations - 1), [], 0

    scorer = Scorer(config.reward, config.reward_timeout_s)  # a process pool; closed below

    def score(batch, problems, errors_metric=TRAIN_ERRORS):  # the run's one reward path: training and validation
        return scorer.score_batch(batch, problems, parts.tokenizer, errors_metric)

    validator = Validator(parts.val_items, config.val_every, config.val_samples, config.val_temperature,
                          config.iterations, config.seed, parts.val_policy, score, config.val_before_train)
    try:
        if (state := checkpointer.restore(trainers, data)) is not None:
            first = state.iteration + 1
            trainers.update_weights(rollout)
            notes.append(f"resumed from the checkpoint after iteration {state.iteration} "
                         f"(policy version {trainers.policy_version})")
            log.info(notes[-1])
        log.info("instances and trainer ready")
        system = SystemSampler(lambda: ask_actors(system_actors(trainers, rollout)))
        initial: dict[str, float] = {}  # val/* of the initial weights, sent with iteration 0
        if validator.due_before(first):
            initial, val_notes = _validate(validator, rollout, 0, len(parts.val_items), "before training")
            notes += val_notes
        for it in range(first, config.iterations):
            t_iter = time.time()
            if replaced := rollout.replace_dead_instances(it):  # died between iterations: give the replacements the weights
                trainers.update_weights(rollout, only=replaced)
            prompts = data.next_batch()
            batch = rollout.generate(it, [p.token_ids for p in prompts], seed=config.seed * 7919 + it)
            rewards = score(batch, [p.problem for p in prompts])
            assign_advantages(batch, config.adv_estimator, config.norm_adv_by_std)
            metrics = {**batch.metrics, **trainers.train(batch), **rewards,
                       "rollout/policy_version": float(rollout.policy_version)}
            metrics["sync/weight_time_s"] = trainers.update_weights(rollout)
            metrics["sync/weight_bytes"] = float(trainers.last_sync_bytes)
            if validator.due(it):  # on the weights just pushed, logged at this iteration's step
                val_metrics, val_notes = _validate(validator, rollout, it, len(parts.val_items), "")
                metrics.update(val_metrics)
                batch.events += val_notes  # after the training rollout's own
            elif it == 0:
                metrics.update(initial)
            metrics["iteration/time_s"] = time.time() - t_iter
            system_metrics, system_notes = system.sample()
            metrics.update(system_metrics)
            delivered = telemetry.send(it, metrics, trace=batch.trace, trace_meta=batch.trace_meta,
                                       events=notes + batch.events + scorer.take_notes() + system_notes)
            notes = []
            if folder := checkpointer.after_iteration(it, delivered, trainers, data):
                log.info("checkpoint after iteration %d saved (%s)", it, folder)
            log.info("iteration %d: rollout %.2fs (%.0f tok/s, tail %.2fs), train %.2fs, sync %.2fs, reward %.3f",
                     it, metrics["rollout/time_s"], metrics["rollout/throughput_tok_s"],
                     metrics["rollout/tail_time_s"], metrics["train/time_s"], metrics["sync/weight_time_s"],
                     metrics["reward/mean"])
    finally:  # best effort: a dead actor must not hide the error that killed the run
        trainers.shutdown()
        rollout.shutdown()
        scorer.close()


def _validate(validator, rollout, it: int, prompts: int, when: str) -> tuple[dict[str, float], list[str]]:
    """``validator.run`` with ``val/time_s`` added, logged."""
    t_val = time.time()
    metrics, notes = validator.run(rollout, it)
    metrics["val/time_s"] = time.time() - t_val
    log.info("iteration %d: validation accuracy %.3f on %d prompts (%.2fs)%s", it, metrics["val/accuracy"],
             prompts, metrics["val/time_s"], f" {when}" if when else "")
    return metrics, notes
