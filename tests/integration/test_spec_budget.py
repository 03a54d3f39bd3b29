"""The per-token draft budget (``grouped-budget``, ours) on a real vLLM engine: it loads as
the engine's proposer, drafts, and greedy outputs stay those of the plain engines."""
import pytest

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def budget_engine(ray_driver, tiny_model_path):
    from umbra.rollout.instance import start_instances
    from umbra.speculative.server import start_draft_server

    server = start_draft_server()
    inst = start_instances(1, tiny_model_path, 512, 64, seed=0, kv_cache_gib=1, draft_server=server,
                           speculation="grouped-budget")
    yield inst, server
    for handle in [*inst, server]:
        ray_driver.kill(handle)


def test_budget_drafts_and_greedy_outputs_stay_those_of_the_plain_engines(ray_driver, instances, budget_engine):
    from umbra.rollout.policies import SeerPolicy
    from umbra.rollout.request import make_groups
    from umbra.rollout.runner import run_rollout

    spec_instances, server = budget_engine
    prompts = [[1] + [3 + (t % (4 + g)) for t in range(30)] for g in range(4)]  # the tiny model loops on them
    plain, _, _ = run_rollout(SeerPolicy(chunk_tokens=8), instances, make_groups(prompts, 4, 48, 1, 0.0), [8, 8])
    before = ray_driver.get(spec_instances[0].engine_counters.remote())
    spec, _, _ = run_rollout(SeerPolicy(chunk_tokens=8), spec_instances, make_groups(prompts, 4, 48, 1, 0.0),
                             [8], server)
    after = ray_driver.get(spec_instances[0].engine_counters.remote())
    assert [r.output_token_ids for r in plain] == [r.output_token_ids for r in spec]
    assert after["spec_draft_tokens"] > before["spec_draft_tokens"]  # the budget proposer drafted
    counters = ray_driver.get(spec_instances[0].draft_counters.remote())
    assert counters["drafting_steps"] > 0
