"""Admission by KV on a real vLLM engine whose KV cache is small (the tiny model, 48 blocks
of 32 tokens): veRL's way (the whole share submitted at once) makes vLLM preempt, while
Seer's KV ledger, sized from the engine's own block count, admits chunks so that vLLM never
preempts, and every context token it re-prefills is one the ledger chose to give up: the
engine's scheduler evicts what the ledger released, never a parked request's KV (vLLM's own
LRU order would)."""
import pytest

pytestmark = pytest.mark.integration

KV_BLOCKS = 48


@pytest.fixture(scope="module")
def small_kv_manager(ray_driver, tiny_model_path):
    from umbra.rollout.instance import start_instances
    from umbra.rollout.instance_pool import InstancePool
    from umbra.rollout.manager import RolloutManager, RolloutShape

    handles = start_instances(1, tiny_model_path, 256, 64, seed=0, kv_cache_gib=1, kv_blocks=KV_BLOCKS)
    # 8 groups x 8 requests of up to 160 tokens: ~11,500 tokens of KV if all ran at once, 1,504 held.
    manager = RolloutManager(InstancePool(handles), RolloutShape(8, 160, 1.0, 256, 64, 4, 1))
    yield manager
    for h in handles:
        ray_driver.kill(h)


def test_verl_preempts_and_the_seer_ledger_does_not(small_kv_manager):
    from umbra.rollout.policies import SeerPolicy, VerlPolicy

    m = small_kv_manager
    budget = m.kv_budget()
    assert budget.tokens[0] <= KV_BLOCKS * budget.block_tokens  # the engine's own count, less headroom
    prompts = [[1] + [(13 * g + t) % 300 + 3 for t in range(19)] for g in range(8)]
    verl = m.generate(0, prompts, seed=1, policy=VerlPolicy())
    assert verl.metrics["rollout/preemptions"] > 0
    seer_policy = SeerPolicy(chunk_tokens=32, kv_block_tokens=budget.block_tokens)
    seer = m.generate(0, prompts, seed=1, policy=seer_policy)
    assert seer.metrics["rollout/preemptions"] == 0
    # the "auto" KV reserve: the engine's step time was timed on it first (outside the rollout's counters)
    step = seer_policy.engine_step
    assert step is m.engine_step() and step(16) > step(1) > 0 and seer_policy.reserve_mode in ("estimate", "adaptive")
    for batch in (verl, seer):
        assert len(batch.requests) == 64 and all(r.done for r in batch.requests)
    keys = ("rollout/time_s", "rollout/preemptions", "rollout/reprefill_tokens", "rollout/output_tokens",
            "rollout/kv_given_up")
    print({k: (verl.metrics[k], seer.metrics[k]) for k in keys})  # (verl, seer), shown with -s
    # every re-prefilled token belongs to a context the ledger gave up (a given-up request's
    # blocks may still be cached when it comes back, so it can be fewer): parked KV is never lost
    assert seer.metrics["rollout/reprefill_tokens"] <= seer_policy.ledger.given_up_tokens, (
        seer.metrics["rollout/reprefill_tokens"], seer_policy.ledger.given_up_tokens)
