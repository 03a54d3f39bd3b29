"""Grouped speculative decoding on real vLLM engines stays lossless: greedy outputs are
identical with speculation on and off (tiny float32 model), and drafts get verified."""
import pytest

pytestmark = pytest.mark.integration


def test_greedy_outputs_identical_with_and_without_speculation(ray_driver, instances, spec_setup):
    from umbra.rollout.metrics import engine_metrics
    from umbra.rollout.policies import SeerPolicy
    from umbra.rollout.request import make_groups
    from umbra.rollout.runner import run_rollout

    spec_instances, server = spec_setup
    # Repetitive prompts make the random tiny model loop, so group drafts find matches.
    prompts = [[1] + [3 + (t % (4 + g)) for t in range(30)] for g in range(4)]
    plain, _, _ = run_rollout(SeerPolicy(chunk_tokens=8), instances, make_groups(prompts, 4, 48, 1, 0.0), [8, 8])
    before = ray_driver.get([i.engine_counters.remote() for i in spec_instances])
    spec, _, _ = run_rollout(SeerPolicy(chunk_tokens=8), spec_instances, make_groups(prompts, 4, 48, 1, 0.0),
                             [8, 8], server)
    after = ray_driver.get([i.engine_counters.remote() for i in spec_instances])
    assert [r.output_token_ids for r in plain] == [r.output_token_ids for r in spec]
    drafted = sum(a["spec_draft_tokens"] - b["spec_draft_tokens"] for a, b in zip(after, before))
    assert drafted > 0  # speculation really ran
    assert engine_metrics(before, after)["rollout/spec/accept_len"] >= 1.0
