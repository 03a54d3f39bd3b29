"""The "auto" growth reserve (ours): the adaptive reserve where the previous rollout's responses
ended far short of ``max_tokens``; else the estimate reserve where a decode step's cost grows in
proportion to its batch (concurrency buys nothing), the adaptive one where it does not; in
the policy, and in the simulator from the cluster's step model."""
from umbra.rollout.policies import SeerPolicy
from umbra.rollout.policies.kv_ledger import KVBudget, KVLedger
from umbra.rollout.policies.kv_reserve import FILL, batches, choose, fill, over_reserved
from umbra.rollout.request import make_groups
from umbra.sim.engine import simulate
from umbra.sim.step_model import StepModel
from umbra.sim.workload import Cluster, Workload


def test_a_step_cost_in_proportion_to_the_batch_chooses_the_estimate_reserve():
    assert choose(lambda b: 0.008 * b, 31, 108) == "estimate"
    assert choose(lambda b: 0.0005 + 0.008 * b, 31, 108) == "estimate"  # a small fixed part changes nothing


def test_a_step_cost_fixed_by_the_batch_chooses_the_adaptive_reserve():
    assert choose(lambda b: 0.0095 + 15e-6 * b, 31, 256) == "adaptive"  # memory-bound: concurrency is throughput
    assert choose(None, 31, 256) == "adaptive"  # unknown step time: the GPU presets' best
    assert choose(lambda b: 1.0, 64, 64) == "estimate"  # the reserve costs no concurrency


def test_below_the_simulated_crossover_the_estimate_reserve_is_chosen():
    # probes of real CPU runs (README): 149.9 ms + 13.1 ms a sequence reads 1.21 between 36 and
    # 129 sequences, and the estimate reserve was the faster; 98.6 ms + 3.5 ms reads 1.46, and
    # adaptive was
    assert choose(lambda b: 0.1499 + 0.0131 * b, 36, 129) == "estimate"
    assert choose(lambda b: 0.0986 + 0.0035 * b, 36, 129) == "adaptive"


def test_batches_are_the_worst_case_and_the_one_chunk_concurrency_of_the_tightest_instance():
    led = KVLedger(KVBudget([1600, 3200], 16))
    # prompt 100 + 512 = 612 -> 39 blocks: 100 // 39 = 2; prompt + one chunk of 64 -> 11 blocks: 100 // 11 = 9
    assert batches(led, [256, 256], 100, 512, 64) == (2, 9)
    assert batches(led, [4, 4], 100, 512, 64) == (2, 4)  # the sequence limit bounds both


def test_the_policy_resolves_auto_at_reset_from_the_engine_step():
    groups = make_groups([[1] * 100] * 4, 4, 512, 0)
    kv = KVBudget([16 * 160], 16)
    p = SeerPolicy(chunk_tokens=64)
    assert p.needs_engine_step
    p.reset(groups, [256], kv)
    assert p.reserve_mode == "adaptive"  # no step time given
    p.engine_step = lambda b: 0.008 * b
    p.reset(make_groups([[1] * 100] * 4, 4, 512, 0), [256], kv)
    assert p.reserve_mode == "estimate"
    assert not SeerPolicy(growth_reserve="estimate").needs_engine_step


def sim_workload(step):
    # 4 groups x 8 requests (prompt 40, 40-300 tokens, a quarter clipped) on 2 instances whose
    # KV holds 8 worst-case requests each but ~5x as many single chunks
    groups = [[(40, 40 + (37 * (g * 8 + i)) % 261) for i in range(8)] for g in range(4)]
    return Workload("r", groups, 300, Cluster(2, 8 * 340, 64, step))


def test_the_simulator_gives_auto_its_step_model():
    cpu = StepModel(c0=0.0, c_seq=0.0081, c_ctx=4e-6, c_prefill=5.4e-4)  # as CPU_SMOLLM2
    gpu = StepModel(c0=0.0095, c_seq=15e-6, c_ctx=0.0, c_prefill=1e-5)
    auto_cpu, estimate = SeerPolicy(chunk_tokens=16, kv_block_tokens=16), SeerPolicy(
        chunk_tokens=16, kv_block_tokens=16, growth_reserve="estimate")
    a, e = simulate(auto_cpu, sim_workload(cpu)), simulate(estimate, sim_workload(cpu))
    assert auto_cpu.reserve_mode == "estimate" and auto_cpu.ledger.given_up == 0
    assert a.end_s == e.end_s
    auto_gpu, adaptive = SeerPolicy(chunk_tokens=16, kv_block_tokens=16), SeerPolicy(
        chunk_tokens=16, kv_block_tokens=16, growth_reserve="adaptive")
    a, d = simulate(auto_gpu, sim_workload(gpu)), simulate(adaptive, sim_workload(gpu))
    assert auto_gpu.reserve_mode == "adaptive" and a.end_s == d.end_s


def test_fill_is_the_finished_requests_mean_share_of_max_tokens():
    groups = make_groups([[1] * 10], 4, 200, 0)
    reqs = groups[0]
    assert fill(reqs) is None  # nothing finished: a run's first rollout
    for r, n in zip(reqs[:3], (50, 100, 200)):
        r.add_chunk(0, [1] * n, "stop" if n < 200 else "length", 0.0, 1.0)
    assert abs(fill(reqs) - (0.25 + 0.5 + 1.0) / 3) < 1e-9  # the unfinished fourth does not count
    assert not over_reserved(None) and over_reserved(FILL - 0.01) and not over_reserved(FILL)


def test_the_previous_rollouts_fill_lowers_the_threshold():
    # 12.1% cheaper a token at full batch: estimate in a first rollout (under 1.3) ...
    step = lambda b: 0.150 + 0.0131 * b  # noqa: E731
    assert choose(step, 36, 129) == "estimate" and choose(step, 36, 129, previous_fill=FILL) == "estimate"
    # ... adaptive after responses that ended far short of max_tokens
    assert choose(step, 36, 129, previous_fill=FILL - 0.1) == "adaptive"
    # a step in proportion to the batch: concurrency buys nothing at any fill
    assert choose(lambda b: 0.008 * b, 31, 108, previous_fill=0.1) == "estimate"


def short_or_long(lengths):
    # 2 groups x 8 requests of prompt 40 and max_tokens 300 on 2 instances (KV of 8 worst cases);
    # a step with a fixed part: 1.05-1.3x cheaper a token at the one-chunk batch
    step = StepModel(c0=0.01, c_seq=0.0081, c_ctx=4e-6, c_prefill=5.4e-4)
    return Workload("r", [[(40, n) for n in lengths[g * 8:(g + 1) * 8]] for g in range(2)], 300,
                    Cluster(2, 8 * 340, 64, step))


def test_a_previous_rollout_that_ended_far_short_of_max_tokens_chooses_adaptive():
    p = SeerPolicy(chunk_tokens=16, kv_block_tokens=16)
    simulate(p, short_or_long([40 + 5 * i for i in range(16)]))  # mean 77.5 of 300: fill 0.26
    assert p.reserve_mode == "estimate"  # first rollout: the step time alone decides
    p.tight.add(1)  # as if an earlier adaptive rollout had given up KV there
    simulate(p, short_or_long([250 + 3 * i for i in range(16)]))
    assert p.previous_fill < FILL and p.reserve_mode == "adaptive" and 1 not in p.tight
    simulate(p, short_or_long([250 + 3 * i for i in range(16)]))  # previous fill 0.91
    assert p.previous_fill > FILL and p.reserve_mode == "estimate"
    fixed = SeerPolicy(chunk_tokens=16, kv_block_tokens=16, growth_reserve="estimate")
    simulate(fixed, short_or_long([40 + 5 * i for i in range(16)]))
    simulate(fixed, short_or_long([40 + 5 * i for i in range(16)]))
    assert fixed.reserve_mode == "estimate"  # only "auto" weighs the previous rollout


def test_variant_reserve_suffix():
    import pytest

    from umbra.rollout.policies.variants import base_name, policy_names, variant

    v = variant("seer-no-spec@estimate", 64, kv_reserve="adaptive")
    assert v.name == "seer-no-spec@estimate" and v.options["growth_reserve"] == "estimate" and not v.spec
    assert variant("seer-no-spec", 64, kv_reserve="adaptive").options["growth_reserve"] == "adaptive"
    assert base_name("seer@auto") == "seer"
    assert policy_names(" verl, seer@estimate ,") == ["verl", "seer@estimate"]
    for text in ("", " , ", "seer,verl,seer"):
        with pytest.raises(ValueError, match="no policy|more than once"):
            policy_names(text)
    for bad in ("verl@estimate", "seer-no-spec@sometimes", "seer-nope@estimate"):
        with pytest.raises(ValueError):
            variant(bad, 64)
