"""The iteration loop of one run, run by the Ray job's driver (no Django here)."""
from __future__ import annotations

import logging
import random
import time

import torch

from umbra.config import PROMPT_BUDGET, RunConfig
from umbra.data.registry import load_problems
from umbra.job.checkpoint import CheckpointDir, LoopState, sampler_state
from umbra.job.instances import InstancePool
from umbra.models.registry import context_length, resolve_model
from umbra.rewards.math_answer import math_reward
from umbra.rollout.capacity import concurrency_cap
from umbra.rollout.instance import start_instances
from umbra.rollout.metrics import engine_metrics, policy_counters, request_records, rollout_metrics
from umbra.rollout.policies import make_policy
from umbra.rollout.prompts import encode_prompts
from umbra.rollout.request import make_groups
from umbra.rollout.runner import run_rollout
from umbra.spec.server import start_draft_server
from umbra.training.grpo import group_advantages
from umbra.training.trainer import start_trainer

log = logging.getLogger("umbra.job")


class OffPolicyError(RuntimeError):
    """A rollout used weights other than the trainer's current version."""


def sync_weights(trainer, instances, version: int) -> float:
    """Push the trainer's weights to every instance; returns seconds taken.

    Instances on the trainer's node read a shared-memory file (no extra copies of the
    weights in memory); the others get safetensors bytes through the object store.
    """
    import ray

    t0 = time.time()
    path = ray.get(trainer.save_weights.remote())
    loaded = ray.get([inst.load_weights.remote(path, version) for inst in instances])
    remote = [inst for inst, ok in zip(instances, loaded) if ok is None]
    if remote:
        blob = trainer.weights_blob.remote()  # one object in the store, read by every remote instance
        ray.get([inst.load_weights.remote(blob, version) for inst in remote])
    return time.time() - t0


def run(config: RunConfig, telemetry, checkpoints: CheckpointDir | None = None) -> None:
    """Run ``config.iterations`` GRPO iterations, sending metrics via ``telemetry``.

    With ``checkpoints`` it continues after the latest checkpoint there (if any) and saves
    one every ``config.checkpoint_every`` iterations, once that iteration's metrics have been
    delivered (so a resumed run leaves no gap in the metric history). A rollout instance that
    dies is survived: its chunks run on the others and a replacement takes its place.

    Raises OffPolicyError if an instance sampled with stale weights, and lets other Ray
    errors propagate (the job then fails and the platform records why).
    """
    import ray
    from transformers import AutoTokenizer

    model_path = str(resolve_model(config.model))
    tokenizer = AutoTokenizer.from_pretrained(model_path)
    problems = load_problems(config.dataset, config.seed)
    encoded = encode_prompts(tokenizer, problems)
    pool = [(p, ids) for p, ids in zip(problems, encoded) if len(ids) <= PROMPT_BUDGET]
    if not pool:
        raise ValueError(f"every prompt of {config.dataset} is longer than {PROMPT_BUDGET} tokens")
    log.info("loaded %d problems from %s; starting %d rollout instances", len(pool), config.dataset,
             config.rollout_instances)

    max_len = min(context_length(config.model), PROMPT_BUDGET + config.max_tokens)
    draft_server = start_draft_server() if config.spec_decoding else None
    instance_pool = InstancePool(config.rollout_instances, lambda n, first_id: start_instances(
        n, model_path, max_len, config.max_num_seqs, config.seed, config.kv_cache_gib, draft_server,
        first_id=first_id))
    instances = instance_pool.handles  # replacements take their index in this same list
    trainer = start_trainer(model_path, config.learning_rate, config.kl_coef, config.clip_eps,
                            config.train_minibatches, config.seed)
    block = ray.get(instances[0].ready.remote())["kv_block_tokens"]
    policy = make_policy(config.rollout_policy, **config.policy_options(kv_block_tokens=block))
    longest_prompt = max(len(ids) for _, ids in pool)
    cap = concurrency_cap(model_path, config.kv_cache_gib, longest_prompt + config.max_tokens, config.max_num_seqs)
    capacities = [cap] * config.rollout_instances
    rng = random.Random(config.seed)
    version, first = 0, 0
    events: list[str] = []
    latest = checkpoints.latest() if checkpoints else None
    if latest is not None:
        folder, state = latest
        version = ray.get(trainer.load_checkpoint.remote(str(folder)))
        rng, first = state.restore_sampler(), state.iteration + 1
        sync_weights(trainer, instances, version)
        events.append(f"resumed from the checkpoint after iteration {state.iteration} (policy version {version})")
        log.info(events[-1])
    log.info("instances and trainer ready")
    checkpoint_due = False

    try:
        for it in range(first, config.iterations):
            t_iter = time.time()
            dead = instance_pool.dead()
            for i in dead:  # died between iterations: replace it and give it the current weights
                events.append(instance_pool.replace(i, f"did not answer before iteration {it}"))
            if dead:
                sync_weights(trainer, [instances[i] for i in dead], version)
            batch = [pool[rng.randrange(len(pool))] for _ in range(config.prompts_per_iteration)]
            groups = make_groups([ids for _, ids in batch], config.group_size, config.max_tokens,
                                 config.seed * 7919 + it, config.temperature)
            counters_before = instance_pool.counters()
            requests, start_s, end_s = run_rollout(policy, instances, groups, capacities, draft_server)
            for i in policy.lost_instances:
                counters_before[i] = dict.fromkeys(counters_before[i], 0.0)  # its replacement counts from 0
                events.append(instance_pool.replace(i, f"died during the rollout of iteration {it}; its running "
                                                 "chunks were re-dispatched to the other instances"))
            engine = engine_metrics(counters_before, instance_pool.counters())
            stale = {r.policy_version for r in requests} - {version}
            if stale:
                raise OffPolicyError(f"iteration {it}: rollout used policy versions {stale}, trainer is at {version}")

            texts = tokenizer.batch_decode([r.output_token_ids for r in requests], skip_special_tokens=True)
            rewards = [math_reward(t, batch[r.group_id][0].answer) for t, r in zip(texts, requests)]
            adv = group_advantages(torch.tensor(rewards).view(len(groups), config.group_size)).view(-1)
            train = ray.get(trainer.train_step.remote([r.prompt_token_ids for r in requests],
                                                      [r.output_token_ids for r in requests], adv.tolist()))
            version = int(train.pop("policy_version"))
            sync_s = sync_weights(trainer, instances, version)

            metrics = rollout_metrics(requests, start_s, end_s, config.rollout_instances)
            metrics.update(policy_counters(policy))
            metrics.update(engine)
            metrics.update(train)
            metrics.update({
                "reward/mean": sum(rewards) / len(rewards),
                "reward/accuracy": sum(r > 0.5 for r in rewards) / len(rewards),
                "sync/weight_time_s": sync_s,
                "rollout/policy_version": float(version - 1),
                "iteration/time_s": time.time() - t_iter,
            })
            delivered = telemetry.send(it, metrics, trace=request_records(requests, start_s),
                                       trace_meta={"policy": config.rollout_policy,
                                                   "instances": config.rollout_instances, "capacity": cap,
                                                   "kv_cache_gib": config.kv_cache_gib,
                                                   "max_tokens": config.max_tokens},
                                       events=events)
            events = []
            checkpoint_due |= bool(checkpoints and config.checkpoint_every and (it + 1) % config.checkpoint_every == 0)
            if checkpoint_due and delivered:  # undelivered metrics would leave a gap after a resume
                t_ck = time.time()
                folder = checkpoints.begin(it)
                ray.get(trainer.save_checkpoint.remote(str(folder)))
                checkpoints.commit(folder, LoopState(it, version, sampler_state(rng)))
                checkpoint_due = False
                log.info("checkpoint after iteration %d saved in %.1fs (%s)", it, time.time() - t_ck, folder)
            log.info("iteration %d: rollout %.2fs (%.0f tok/s, tail %.2fs), train %.2fs, sync %.2fs, reward %.3f",
                     it, metrics["rollout/time_s"], metrics["rollout/throughput_tok_s"], metrics["rollout/tail_time_s"],
                     metrics["train/time_s"], sync_s, metrics["reward/mean"])
    finally:  # best effort: a dead actor must not hide the error that killed the run
        cleanup = [trainer.release_weights.remote()] + [inst.shutdown.remote() for inst in instances]
        for ref in cleanup:
            try:
                ray.get(ref, timeout=60)
            except Exception as exc:  # noqa: BLE001
                log.warning("cleanup step failed: %s", exc)
