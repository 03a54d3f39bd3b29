"""Real vLLM instances on the tiny model: seeded sampling, chunk boundaries, and weight
sync (after a GRPO step every instance serves exactly the trainer's new weights, and
the next rollout records the new policy version)."""
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

PROBE = [1, 40, 41, 42, 43, 44, 45, 46, 47, 48]


def test_seeded_requests_reproduce_beyond_one_prefill_batch(ray_driver, instances):
    """64 prompts of 200 tokens (> one 4096-token prefill batch) with per-request seeds:
    every request completes, and the same seeds give the same tokens on either instance."""
    from umbra.rollout.request import make_groups

    from umbra.rollout.policies import StaticGroupPolicy
    from umbra.rollout.runner import run_rollout

    prompts = [[1] + [(7 * g + t) % 500 + 3 for t in range(199)] for g in range(8)]
    first, _, _ = run_rollout(StaticGroupPolicy(), instances[:1], make_groups(prompts, 8, 8, 5), [64])
    again, _, _ = run_rollout(StaticGroupPolicy(), instances[1:], make_groups(prompts, 8, 8, 5), [64])
    assert len(first) == 64 and all(len(r.output_token_ids) >= 1 for r in first)
    assert [r.output_token_ids for r in first] == [r.output_token_ids for r in again]


def test_greedy_responses_identical_under_static_group_verl_and_seer(ray_driver, instances):
    """Chunk boundaries add or drop no token: greedy decoding gives the same responses
    whole (static-group; verl, every request submitted at once) and in 5-token chunks moved
    between instances (seer without a ledger) or placed by a small KV ledger (seer)."""
    from umbra.rollout.policies import SeerPolicy, StaticGroupPolicy, VerlPolicy
    from umbra.rollout.policies.kv_ledger import KVBudget
    from umbra.rollout.request import make_groups
    from umbra.rollout.runner import run_rollout

    prompts = [[1] + [(11 * g + t) % 400 + 3 for t in range(20 + g)] for g in range(6)]
    whole, _, _ = run_rollout(StaticGroupPolicy(), instances, make_groups(prompts, 4, 40, 3, 0.0), [8, 8])
    verl, _, _ = run_rollout(VerlPolicy(), instances, make_groups(prompts, 4, 40, 3, 0.0), [1 << 30] * 2)
    chunked, _, _ = run_rollout(SeerPolicy(chunk_tokens=5, affinity_spread=0), instances,
                                make_groups(prompts, 4, 40, 3, 0.0), [3, 3])
    ledger = SeerPolicy(chunk_tokens=8, kv_block_tokens=32)
    placed, _, _ = run_rollout(ledger, instances, make_groups(prompts, 4, 40, 3, 0.0), [64, 64],
                               kv=KVBudget([320, 320], 32))  # 10 blocks each: a few requests at a time
    assert [r.output_token_ids for r in whole] == [r.output_token_ids for r in verl]
    assert [r.output_token_ids for r in whole] == [r.output_token_ids for r in chunked]
    assert [r.output_token_ids for r in whole] == [r.output_token_ids for r in placed]
    assert max(len(r.chunks) for r in chunked) > 1 and {r.instance for r in chunked} == {0, 1}


def test_chunked_rollouts_of_the_same_seeds_sample_the_same_tokens_in_any_order(ray_driver, instances):
    """What the benchmark's chunked oracles rank by: at temperature 1.0, divided rollout in
    first-come order, in Alg. 2's order and in the true-length oracle's order (ranked by the
    first rollout's lengths) sample the same tokens, since a chunk's seed follows from its
    request and position, wherever and whenever it runs."""
    from umbra.rollout.policies import SeerOraclePolicy, SeerPolicy
    from umbra.rollout.policies.kv_ledger import KVBudget
    from umbra.rollout.request import make_groups
    from umbra.rollout.runner import run_rollout

    prompts = [[1] + [(13 * g + t) % 400 + 3 for t in range(12 + 3 * g)] for g in range(4)]

    def sample(policy):
        out, _, _ = run_rollout(policy, instances, make_groups(prompts, 4, 48, 11, 1.0), [64, 64],
                                kv=KVBudget([320, 320], 32))  # 10 blocks each: a few requests at a time
        order = [r.request_id for r in sorted(out, key=lambda r: (r.chunks[0].start_s, r.request_id))]
        return {r.request_id: r.output_token_ids for r in out}, order

    fifo, fifo_order = sample(SeerPolicy(chunk_tokens=8, kv_block_tokens=32, context_aware=False))
    alg2, alg2_order = sample(SeerPolicy(chunk_tokens=8, kv_block_tokens=32))
    lengths = {rid: len(tokens) for rid, tokens in fifo.items()}
    oracle, _ = sample(SeerOraclePolicy(lengths=lengths, chunk_tokens=8, kv_block_tokens=32))
    assert fifo_order != alg2_order  # probes first: another order of chunks
    assert fifo == alg2 == oracle and len(fifo) == 16


@pytest.mark.parametrize("ranks", [1, 2])
def test_instances_serve_trainer_weights_after_step(ray_driver, instances, tiny_model_path, ranks):
    """The trainer group's weight sync: after one GRPO step every instance serves the new
    weights (same log-probs as the trainer) and the next rollout is sampled by version 1 —
    also from 2 FSDP2 ranks (the full state dict gathered to rank 0); then a rank killed
    mid-run fails the next step at once, naming it, and so does one that dies at the weight
    sync; neither leaves a rank, the placement group or a weight file behind."""
    ray = ray_driver
    from umbra.rollout.instance_pool import InstancePool
    from umbra.rollout.manager import RolloutManager, RolloutShape
    from umbra.rollout.policies import StaticGroupPolicy
    from umbra.training.group import TrainerGroup

    manager = RolloutManager(InstancePool(instances), RolloutShape(4, 16, 1.0, 512, 64, 16, 1))
    manager.policy = StaticGroupPolicy()
    trainers = TrainerGroup.start(tiny_model_path, learning_rate=5e-2, kl_coef=0.01, clip_eps=0.2, minibatches=1,
                                  seed=0, ranks=ranks, micro_tokens=24)
    assert len(trainers.nodes) == ranks and all(n["host"] for n in trainers.nodes)
    try:
        before = trainers.prompt_logprobs(PROBE)
        for inst in instances:  # version 0: engines and trainer load the same checkpoint
            assert ray.get(inst.prompt_logprobs.remote(PROBE)) == pytest.approx(before, abs=1e-3)

        batch = manager.generate(0, [PROBE[:4], PROBE[:6]], seed=1)
        assert batch.policy_versions() == {0} and len(batch.samples) == 8
        for s in batch.samples:
            s.advantage = 1.0 if s.index % 2 else -1.0
        trainers.train(batch)
        assert trainers.policy_version == 1
        trainers.update_weights(manager)
        assert manager.policy_version == 1 and trainers.last_sync_bytes > 0

        after = trainers.prompt_logprobs(PROBE)
        assert max(abs(a - b) for a, b in zip(after, before)) > 1e-3  # the step changed the policy
        for inst in instances:
            assert ray.get(inst.prompt_logprobs.remote(PROBE)) == pytest.approx(after, abs=1e-3)
            assert ray.get(inst.ready.remote())["policy_version"] == 1

        assert manager.generate(1, [PROBE[:4], PROBE[:6]], seed=2).policy_versions() == {1}
        if ranks == 2:
            import os
            import signal

            ray.kill(trainers.actors[1])  # mid-run: the next step fails
            _fails_naming_rank_1(trainers, lambda: trainers.train(batch), 120)
            # The weight sync: rank 1 dies (SIGKILL) just before it; rank 0 then waits for it in
            # the gather of the full state dict, and the sync fails at once, naming rank 1.
            trainers = TrainerGroup.start(tiny_model_path, learning_rate=5e-2, kl_coef=0.01, clip_eps=0.2,
                                          minibatches=1, seed=0, ranks=ranks, micro_tokens=24)
            trainers.update_weights(manager)  # a first sync: rank 0 holds a shared-memory file
            os.kill(trainers.nodes[1]["pid"], signal.SIGKILL)
            _fails_naming_rank_1(trainers, lambda: trainers.update_weights(manager), 60)
    finally:
        trainers.shutdown()
        # Shared instances go back to the checkpoint for the tests that follow. The
        # embeddings are tied: send lm_head too, as the trainer does, or it stays stale.
        from safetensors.torch import load, save

        tensors = load((Path(tiny_model_path) / "model.safetensors").read_bytes())
        tensors["lm_head.weight"] = tensors["model.embed_tokens.weight"].clone()
        blob = save(tensors)
        ray.get([inst.load_weights.remote(blob, 0) for inst in instances])
        for inst in instances:
            assert ray.get(inst.prompt_logprobs.remote(PROBE)) == pytest.approx(before, abs=1e-4)


def _fails_naming_rank_1(trainers, call, within_s: float) -> None:
    """``call`` raises TrainerRankError naming rank 1 within ``within_s``; then the group's
    shutdown leaves no rank process, no placement group and no shared-memory weight file."""
    import time

    from ray.util.placement_group import placement_group_table

    from umbra.training.group import TrainerRankError
    from umbra.training.weight_sync import shared_folder

    pids = [n["pid"] for n in trainers.nodes]
    assert shared_folder(pids[0]).exists()  # rank 0 synced before
    t0 = time.time()
    with pytest.raises(TrainerRankError, match="trainer rank 1 on node"):
        call()
    assert time.time() - t0 < within_s
    trainers.shutdown()

    def left():
        return (any(Path(f"/proc/{pid}").exists() for pid in pids),
                placement_group_table(trainers.placement)["state"] != "REMOVED", shared_folder(pids[0]).exists())

    deadline = time.time() + 30
    while any(left()) and time.time() < deadline:
        time.sleep(0.5)
    assert left() == (False, False, False), "(a rank, the placement group, rank 0's weight file) left behind"
