"""After a GRPO step every vLLM instance serves exactly the trainer's new weights,
and the next rollout records the new policy version (real Ray, real vLLM)."""
import pytest

pytestmark = pytest.mark.integration

PROBE = [1, 40, 41, 42, 43, 44, 45, 46, 47, 48]


@pytest.fixture(scope="module")
def ray_driver(ray_cluster):
    import ray

    ray.init(address=ray_cluster["gcs"], namespace="umbra-test-weights", log_to_driver=False)
    yield ray
    ray.shutdown()


def test_instances_serve_trainer_weights_after_step(ray_driver, tiny_model_path):
    ray = ray_driver
    from umbra.job.loop import sync_weights
    from umbra.rollout.instance import start_instances
    from umbra.rollout.policies import StaticGroupPolicy
    from umbra.rollout.request import make_groups
    from umbra.rollout.runner import run_rollout
    from umbra.training.trainer import start_trainer

    instances = start_instances(2, tiny_model_path, 256, 16, seed=0, temperature=1.0, kv_cache_gib=1)
    trainer = start_trainer(tiny_model_path, learning_rate=5e-2, kl_coef=0.01, clip_eps=0.2, minibatches=1, seed=0)
    try:
        before = ray.get(trainer.prompt_logprobs.remote(PROBE))
        for inst in instances:  # version 0: engines and trainer load the same checkpoint
            assert ray.get(inst.prompt_logprobs.remote(PROBE)) == pytest.approx(before, abs=1e-3)

        groups = make_groups([PROBE[:4], PROBE[:6]], group_size=4, max_tokens=16, seed=1)
        reqs, _, _ = run_rollout(StaticGroupPolicy(), instances, groups)
        assert {r.policy_version for r in reqs} == {0}
        adv = [1.0 if r.index % 2 else -1.0 for r in reqs]
        stats = ray.get(trainer.train_step.remote([r.prompt_token_ids for r in reqs],
                                                  [r.output_token_ids for r in reqs], adv))
        assert stats["policy_version"] == 1.0
        sync_weights(trainer, instances, 1)

        after = ray.get(trainer.prompt_logprobs.remote(PROBE))
        assert max(abs(a - b) for a, b in zip(after, before)) > 1e-3  # the step changed the policy
        for inst in instances:
            assert ray.get(inst.prompt_logprobs.remote(PROBE)) == pytest.approx(after, abs=1e-3)
            assert ray.get(inst.ready.remote())["policy_version"] == 1

        reqs, _, _ = run_rollout(StaticGroupPolicy(), instances, groups)
        assert {r.policy_version for r in reqs} == {1}
    finally:
        for inst in instances:
            ray.get(inst.shutdown.remote())
            ray.kill(inst)
        ray.kill(trainer)
