"""The rollout simulator (pure logic): hand-computed timelines, conservation, determinism,
KV capacity, workloads and traces."""
import json
import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from umbra.rollout.policies.variants import build, variant
from umbra.rollout.metrics import rollout_metrics
from umbra.rollout.policies import RequestLBPolicy, SeerOraclePolicy, SeerPolicy
from umbra.sim.engine import simulate
from umbra.sim.spec_model import SpecModel
from umbra.sim.step_model import StepModel, fit
from umbra.sim.workload import Cluster, Workload, group_lengths, parse_trace, preset_workload, workload_from_rows


def workload(groups, max_tokens=10, instances=1, max_batch=8, step=None, kv_tokens=10_000):
    step = step or StepModel(c0=1.0, c_seq=0.0, c_ctx=0.0, c_prefill=0.0)
    return Workload("t", groups, max_tokens, Cluster(instances, kv_tokens, max_batch, step))


def finishes(res):
    return {r.request_id: round(r.finish_s, 6) for r in res.requests}


def test_one_token_per_second_whole_requests():
    res = simulate(RequestLBPolicy(), workload([[(4, 3), (4, 5)]]))
    assert finishes(res) == {"g0-r0": 3.0, "g0-r1": 5.0} and res.end_s == 5.0


def test_a_full_instance_queues_the_next_request():
    res = simulate(RequestLBPolicy(), workload([[(4, 3), (4, 5)]], max_batch=1))
    assert finishes(res) == {"g0-r0": 3.0, "g0-r1": 8.0}


def test_step_time_grows_with_the_batch():
    # T = batch seconds: two requests advance 1 token per 2 s until one leaves.
    res = simulate(RequestLBPolicy(), workload([[(4, 3), (4, 5)]], step=StepModel(0.0, 1.0, 0.0, 0.0)))
    assert finishes(res) == {"g0-r0": 6.0, "g0-r1": 8.0}


def test_prefill_stalls_the_instance_and_the_group_prompt_is_cached():
    step = StepModel(c0=1.0, c_seq=0.0, c_ctx=0.0, c_prefill=0.5)
    res = simulate(RequestLBPolicy(), workload([[(4, 3), (4, 5)]], step=step))
    # prompt of 4 tokens: 2 s; the sibling hits the cached prompt: 1 token, 0.5 s; both run from 2.5 s
    assert finishes(res) == {"g0-r0": 5.5, "g0-r1": 7.5}


def test_chunks_on_the_same_instance_reprefill_one_token():
    step = StepModel(c0=1.0, c_seq=0.0, c_ctx=0.0, c_prefill=0.5)
    res = simulate(SeerPolicy(chunk_tokens=2), workload([[(1, 5)]], step=step))
    r = res.requests[0]
    assert [c.tokens for c in r.chunks] == [2, 2, 1] and [c.prefill for c in r.chunks] == [1, 1, 1]
    assert r.finish_s == pytest.approx(5 + 3 * 0.5)


def test_speculation_multiplies_tokens_per_step_when_drafting_pays():
    spec = SpecModel.from_accept_len(3.0, gamma_max=8)
    assert spec.tokens_per_step(8) == pytest.approx(3.0)
    step = StepModel(c0=1.0, c_seq=0.001, c_ctx=0.0, c_prefill=0.0)  # verification is nearly free
    assert spec.draft_length(1, 0, step) == 8
    plain = simulate(RequestLBPolicy(), workload([[(1, 300)]], max_tokens=300, step=step)).end_s
    fast = simulate(RequestLBPolicy(), workload([[(1, 300)]], max_tokens=300, step=step), spec).end_s
    assert fast < plain / 2.5
    costly = StepModel(c0=0.0, c_seq=1.0, c_ctx=0.0, c_prefill=0.0)  # every drafted token costs a full token
    assert SpecModel.from_accept_len(1.2).draft_length(64, 0, costly) == 0


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 6), st.integers(1, 6), st.integers(1, 4), st.integers(1, 6), st.integers(8, 200),
       st.sampled_from(["verl", "static-group", "request-lb", "seer", "seer-no-spec", "seer-divided", "oracle-lfs",
                        "oracle-divided"]),
       st.integers(0, 1000))
def test_conservation_determinism_and_kv(n_groups, g_size, instances, max_batch, max_tokens, name, seed):
    rng = random.Random(seed)
    groups = [[(rng.randint(1, 50), rng.randint(1, max_tokens + 20)) for _ in range(g_size)] for _ in range(n_groups)]
    kv = max_batch * (50 + max_tokens)
    step = StepModel(c0=0.01, c_seq=0.001, c_ctx=1e-5, c_prefill=1e-4)
    w = Workload("p", groups, max_tokens, Cluster(instances, kv, max_batch, step))
    lengths = {f"g{g}-r{i}": o for g, grp in enumerate(groups) for i, (_, o) in enumerate(grp)}
    runs, chunk = [], rng.choice([4, 16, 64])
    for _ in range(2):
        v = variant(name, chunk, 16)
        runs.append(simulate(build(v, lengths), w, SpecModel.from_accept_len(2.0) if v.spec else None))
    a, b = runs
    for r, (g, i) in zip(a.requests, [(g, i) for g in range(n_groups) for i in range(g_size)]):
        want = min(groups[g][i][1], max_tokens)
        assert r.done and r.num_generated == want == sum(c.tokens for c in r.chunks)  # every token once
    assert [(r.finish_s, r.chunks) for r in a.requests] == [(r.finish_s, r.chunks) for r in b.requests]
    assert a.kv_peak_frac <= 1.0 + 1e-9
    m = rollout_metrics(a.requests, 0.0, a.end_s, instances)
    assert m["rollout/output_tokens"] == sum(min(o, max_tokens) for g in groups for _, o in g)


def test_group_lengths_hit_the_mean_and_the_cap():
    lens = group_lengths(200, 8, 1000, 300, random.Random(1))
    flat = [x for g in lens for x in g]
    assert abs(sum(flat) / len(flat) - 300) < 3 and max(flat) <= 1000 and min(flat) >= 1
    with pytest.raises(ValueError):
        group_lengths(2, 2, 100, 100, random.Random(0))


def test_presets_match_table_3_shapes():
    w = preset_workload("moonlight", 16)
    assert w.cluster.instances == 32 and sum(map(len, w.groups)) == 3200 and len(w.groups[0]) == 16
    mean = sum(o for g in w.groups for _, o in g) / 3200
    assert abs(mean - 22_386) / 22_386 < 0.01 and w.max_tokens == 65_536
    with pytest.raises(ValueError, match="unknown workload"):
        preset_workload("nope")
    with pytest.raises(ValueError, match="divide"):
        preset_workload("kimi-k2", 7)


def test_trace_round_trip_and_bad_traces(tmp_path):
    path = tmp_path / "t.jsonl"
    rows = [{"policy": "seer", "group": 0, "index": 1, "prompt_tokens": 5, "output_tokens": 7, "max_tokens": 9},
            {"policy": "seer", "group": 0, "index": 0, "prompt_tokens": 5, "output_tokens": 9, "max_tokens": 9},
            {"policy": "static-group", "group": 0, "index": 0, "prompt_tokens": 5, "output_tokens": 2}]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    def trace_workload(p, cluster, policy=None):
        with open(p) as fh:
            return workload_from_rows(parse_trace(fh, p), cluster, policy)

    w = trace_workload(str(path), Cluster(1, 1000, 4, StepModel(1, 0, 0, 0)))
    assert w.groups == [[(5, 9), (5, 7)]] and w.max_tokens == 9
    assert trace_workload(str(path), w.cluster, policy="static-group").groups == [[(5, 2)]]
    path.write_text('{"group": 0}\n')
    with pytest.raises(ValueError, match="not a trace record"):
        trace_workload(str(path), w.cluster)
    path.write_text("")
    with pytest.raises(ValueError, match="no trace records"):
        trace_workload(str(path), w.cluster)


def test_step_model_fit_recovers_coefficients(tmp_path):
    true = StepModel(c0=0.05, c_seq=0.004, c_ctx=2e-6, c_prefill=0.0)
    samples = [(b, c, 0.0, true.seconds(b, c)) for b in (1, 4, 16, 31) for c in (500, 5000, 15000)]
    got = fit(samples)
    assert got.c0 == pytest.approx(0.05, rel=1e-6) and got.c_seq == pytest.approx(0.004, rel=1e-6)
    got.to_json(str(tmp_path / "m.json"))
    assert StepModel.from_json(str(tmp_path / "m.json")) == got
    for bad in ((-1, 0, 0, 0), (float("nan"), 0.01, 0, 0), (1, 1, 0, float("inf")), (5e-324, 0, 0, 0)):
        with pytest.raises(ValueError):
            StepModel(*bad)  # each would hang or crash the simulator


def test_step_model_fit_recovers_the_hosts_sharing_and_reads_old_files(tmp_path):
    true = StepModel(c0=0.01, c_seq=0.004, c_ctx=2e-6, c_prefill=0.0, c_host=0.003)
    samples = [(b, c, 0.0, true.seconds(b, c, 0.0, o), o) for b in (1, 4, 16) for c in (500, 5000) for o in (0, 8, 30)]
    assert fit(samples).c_host == pytest.approx(0.003, rel=1e-6)
    (tmp_path / "old.json").write_text(json.dumps({"c0": 0.01, "c_seq": 0.004, "c_ctx": 0, "c_prefill": 0}))
    assert StepModel.from_json(str(tmp_path / "old.json")).c_host == 0.0  # saved before c_host: no sharing


def test_instances_sharing_a_host_speed_up_when_the_other_goes_idle():
    # two instances, one short and one long group: once the short one ends, the long one runs
    # alone and (with c_host) decodes faster than it did beside the other
    groups = [[(10, 100)] * 4, [(10, 400)] * 4]
    alone = StepModel(c0=0.0, c_seq=0.01, c_ctx=0.0, c_prefill=0.0)
    shared = StepModel(c0=0.0, c_seq=0.01, c_ctx=0.0, c_prefill=0.0, c_host=0.01)
    ends = {}
    for name, step in (("alone", alone), ("shared", shared)):
        res = simulate(variant_policy("static-group"), Workload("h", groups, 400, Cluster(2, 100_000, 4, step)))
        ends[name] = sorted(max(c.finish_s for c in r.chunks) for r in res.requests)
    assert ends["alone"][0] == pytest.approx(100 * 0.04) and ends["alone"][-1] == pytest.approx(400 * 0.04)
    # beside the other (4 + 4 sequences) a step takes 0.08 s; after t = 8 s the long group runs alone
    assert ends["shared"][0] == pytest.approx(100 * 0.08)
    assert ends["shared"][-1] == pytest.approx(8 + 300 * 0.04)


def test_verl_preempts_under_kv_pressure_and_the_ledger_does_not():
    # 2 groups x 8 requests of 300 tokens on one instance holding 2,000 tokens: vLLM-style
    # admission fills the cache and must preempt; Seer's ledger admits by KV and never does.
    groups = [[(20, 300)] * 8, [(20, 300)] * 8]
    step = StepModel(c0=0.01, c_seq=0.001, c_ctx=1e-6, c_prefill=1e-4)
    w = Workload("p", groups, 300, Cluster(1, 2000, 64, step))
    verl = simulate(variant_policy("verl"), w)
    seer_policy = variant_policy("seer-no-spec")
    seer = simulate(seer_policy, w)
    assert verl.preemptions > 0 and seer.preemptions == 0
    for res in (verl, seer):
        assert all(r.done and r.num_generated == 300 == sum(c.tokens for c in r.chunks) for r in res.requests)
    m = rollout_metrics(verl.requests, 0.0, verl.end_s, 1)
    assert m["rollout/reprefill_tokens"] > 0  # a preempted request's context is recomputed when it resumes


def test_engine_admission_holds_a_groups_prompt_blocks_once():
    # One group of 8 requests with 160-token prompts (10 full blocks of 16) and 16 tokens out,
    # on an instance of 800 KV tokens: held once, the prompt leaves room for all eight
    # (160 + 8 x 32 = 416 tokens at the end), so vLLM-style admission runs them together and
    # never preempts; eight groups of one request each (no sharing, 8 x 176 tokens) cannot.
    step = StepModel(c0=0.01, c_seq=0.001, c_ctx=0.0, c_prefill=0.0)
    shared = simulate(variant_policy("verl"), Workload("s", [[(160, 16)] * 8], 16, Cluster(1, 800, 64, step)))
    assert shared.preemptions == 0 and len({r.chunks[0].start_s for r in shared.requests}) == 1
    apart = simulate(variant_policy("verl"), Workload("a", [[(160, 16)]] * 8, 16, Cluster(1, 800, 64, step)))
    assert apart.preemptions > 0 or len({r.chunks[0].start_s for r in apart.requests}) > 1
    assert shared.end_s < apart.end_s


def variant_policy(name):
    return build(variant(name, 32, 16), None)


def test_versus_trace_simulates_each_policy_on_its_own_records():
    from umbra.sim.compare import versus_trace

    # request-lb recorded 2 requests of 3 and 5 tokens on 1 instance (1 s per step): measured
    # 3 s and 5 s, as the simulator computes them; static-group has no finish times: left out.
    rows = [parse_trace([json.dumps({"policy": "request-lb", "group": 0, "index": i, "prompt_tokens": 4,
                                     "output_tokens": n, "max_tokens": 8, "instances": 1, "capacity": 4,
                                     "finish_s": float(n)})])[0] for i, n in enumerate((3, 5))]
    rows += parse_trace([json.dumps({"policy": "static-group", "group": 0, "index": 0, "output_tokens": 2})])
    out = versus_trace(rows, ["request-lb", "static-group", "seer"], 4, None, False, "chunk", None, None, None,
                       StepModel(c0=1.0, c_seq=0.0, c_ctx=0.0, c_prefill=0.0))
    assert list(out) == ["request-lb"]
    r = out["request-lb"]
    assert r["real_time_s"] == 5.0 and r["time_ratio"] == pytest.approx(1.0)
    assert r["real_tail_s"] == 2.0 and r["tail_ratio"] == pytest.approx(1.0)
    assert r["real_p90_s"] == 3.0 and r["p90_ratio"] == pytest.approx(1.0)  # the first of 2 requests: 90% done
    with pytest.raises(ValueError, match="finish_s"):
        parse_trace(['{"group": 0, "index": 0, "output_tokens": 1, "finish_s": -1}'])


def test_trace_samples_count_only_chunks_of_the_same_policy_rollout():
    from umbra.sim.step_model import samples_from_trace

    # two policies' rollouts, each timed from 0 on instance 0: never one batch of 2
    recs = [{"policy": p, "prompt_tokens": 10, "chunks": [[0, 0.0, 32.0, 32]]} for p in ("a", "b")]
    assert [s[0] for s in samples_from_trace(recs)] == [1, 1]
    # with a shared host, a chunk on the same rollout's other instance counts as its load
    recs.append({"policy": "a", "prompt_tokens": 10, "chunks": [[1, 0.0, 16.0, 16]]})
    assert sorted(s[4] for s in samples_from_trace(recs, shared_host=True)) == [0, 0, 1]
    assert [s[4] for s in samples_from_trace(recs)] == [0, 0, 0]  # by default instances are apart


def test_versus_trace_takes_each_policy_cluster_and_checks_every_workload():
    from umbra.sim.compare import versus_trace

    def rec(policy, i, instances, max_tokens=8):
        return json.dumps({"policy": policy, "group": 0, "index": i, "prompt_tokens": 4, "output_tokens": 3,
                           "max_tokens": max_tokens, "instances": instances, "capacity": 2, "finish_s": 3.0})

    rows = parse_trace([rec("request-lb", 0, 1), rec("seer", 0, 3), rec("seer", 1, 3)])
    seen = {}
    versus_trace(rows, ["request-lb", "seer"], 4, None, False, "chunk", None, None, None,
                 StepModel(c0=1.0, c_seq=0.0, c_ctx=0.0, c_prefill=0.0),
                 check=lambda w: seen.setdefault(w.meta["policy"], w.cluster.instances))
    assert seen == {"request-lb": 1, "seer": 3}  # each policy on the cluster it was recorded on

    def refuse(w):
        if w.meta["policy"] == "seer":
            raise ValueError("too big")

    with pytest.raises(ValueError, match="too big"):
        versus_trace(rows, ["request-lb", "seer"], 4, None, False, "chunk", None, None, None,
                     StepModel(c0=1.0, c_seq=0.0, c_ctx=0.0, c_prefill=0.0), check=refuse)


def test_a_trace_fit_takes_c_prefill_from_a_timed_profile(tmp_path, capsys):
    import argparse

    from umbra.bench import profile
    from umbra.sim.step_model import StepModel

    # chunks seen at batch 3, 2 and 1 on one instance: enough to fit c0 and c_seq
    recs = [{"policy": "verl", "prompt_tokens": 10, "chunks": [[0, 0.0, 32.0 * (k + 1), 32]]} for k in range(3)]
    trace = tmp_path / "trace.jsonl"
    trace.write_text("\n".join(json.dumps(r) for r in recs))
    timed = tmp_path / "timed.json"
    StepModel(c0=0.01, c_seq=0.002, c_ctx=0.0, c_prefill=0.0005).to_json(str(timed))
    p = argparse.ArgumentParser()
    profile.add_arguments(p)
    out = tmp_path / "fit.json"
    assert profile.run(p.parse_args(["--from-trace", str(trace), "--out", str(out)])) == 0
    assert StepModel.from_json(str(out)).c_prefill == 0.0  # a trace alone cannot see prefill
    assert profile.run(p.parse_args(["--from-trace", str(trace), "--out", str(out), "--prefill-from", str(timed)])) == 0
    assert StepModel.from_json(str(out)).c_prefill == pytest.approx(0.0005)
    capsys.readouterr()
    assert profile.run(p.parse_args(["--out", str(out), "--prefill-from", str(timed)])) == 2
    assert "--prefill-from goes with --from-trace" in capsys.readouterr().err
    assert profile.run(p.parse_args(["--from-trace", str(trace), "--out", str(out), "--prefill-from", str(trace)])) == 2
    assert "not a step model" in capsys.readouterr().err


def test_versus_trace_reads_a_variant_with_its_own_kv_reserve():
    from umbra.sim.compare import versus_trace

    # the bench records "seer-no-spec@estimate" (a per-variant reserve); the replay runs it
    rows = parse_trace([json.dumps({"policy": "seer-no-spec@estimate", "group": 0, "index": i, "prompt_tokens": 4,
                                    "output_tokens": 4, "max_tokens": 8, "instances": 1, "capacity": 4,
                                    "finish_s": 4.0}) for i in range(2)])
    out = versus_trace(rows, ["seer-no-spec@estimate"], 4, None, False, "adaptive", None, None, None,
                       StepModel(c0=1.0, c_seq=0.0, c_ctx=0.0, c_prefill=0.0))
    assert list(out) == ["seer-no-spec@estimate"] and out["seer-no-spec@estimate"]["sim_time_s"] > 0


def test_vs_trace_skips_recorded_policies_it_cannot_run(tmp_path, capsys):
    import argparse

    from umbra.sim import cli

    rec = {"group": 0, "prompt_tokens": 4, "output_tokens": 4, "max_tokens": 8, "instances": 1, "capacity": 4,
           "finish_s": 4.0}
    trace = tmp_path / "t.jsonl"
    trace.write_text("\n".join(json.dumps({**rec, "policy": p, "index": i})
                               for p in ("verl", "seer@bogus", "spec-ngram") for i in range(2)))
    p = argparse.ArgumentParser()
    cli.add_arguments(p)
    assert cli.run(p.parse_args(["--workload", f"trace:{trace}", "--vs-trace"])) == 0
    out = capsys.readouterr().out
    assert "verl" in out and "seer@bogus" not in out
    only_bad = tmp_path / "bad.jsonl"
    only_bad.write_text(json.dumps({**rec, "policy": "seer@bogus", "index": 0}))
    assert cli.run(p.parse_args(["--workload", f"trace:{only_bad}", "--vs-trace"])) == 2
    assert "records no policy the simulator runs (recorded: seer@bogus)" in capsys.readouterr().err
    assert cli.run(p.parse_args(["--workload", f"trace:{trace}", "--vs-trace", "--policies", "verl,verl"])) == 2
    assert "names verl more than once" in capsys.readouterr().err


def test_chunked_oracle_starts_a_short_groups_outlier_first_where_alg2_cannot():
    # one instance, two slots; group 3's last member is the 200-token outlier of a group whose
    # others end at 10. Alg. 2 ranks it by its group's finished (short) responses and starts it
    # late; the oracle on the same machinery starts it at once and ends sooner.
    groups = [[(8, 50)] * 4, [(8, 50)] * 4, [(8, 50)] * 4, [(8, 10)] * 3 + [(8, 200)]]
    w = Workload("outlier", groups, 256, Cluster(1, 10_000, 2, StepModel(c0=1.0, c_seq=0.0, c_ctx=0.0, c_prefill=0.0)))
    lengths = {f"g{g}-r{i}": o for g, grp in enumerate(groups) for i, (_, o) in enumerate(grp)}
    seer = simulate(build(variant("seer-no-spec", 32, 16), lengths), w)
    oracle = simulate(build(variant("oracle-divided", 32, 16), lengths), w)
    start = {name: next(r for r in res.requests if r.request_id == "g3-r3").chunks[0].start_s
             for name, res in (("seer", seer), ("oracle", oracle))}
    assert start["oracle"] == 0.0 and start["seer"] > 100
    assert oracle.end_s < seer.end_s


def test_group_oracles_rank_by_the_groups_true_lengths_not_the_requests():
    # The outlier case above, the other groups at 60 tokens: ranked by its group's true mean
    # (57.5) the 200-token outlier still starts after the three 60-token groups; ranked by its
    # group's true longest (200) its group goes first (two slots: it starts once two 10-token
    # siblings end), and so do its siblings, which the per-request oracle starts last.
    groups = [[(8, 60)] * 4, [(8, 60)] * 4, [(8, 60)] * 4, [(8, 10)] * 3 + [(8, 200)]]
    w = Workload("outlier", groups, 256, Cluster(1, 10_000, 2, StepModel(c0=1.0, c_seq=0.0, c_ctx=0.0, c_prefill=0.0)))
    lengths = {f"g{g}-r{i}": o for g, grp in enumerate(groups) for i, (_, o) in enumerate(grp)}
    starts = {}
    for name in ("oracle-divided", "oracle-group", "oracle-group-mean"):
        res = simulate(build(variant(name, 32, 16), lengths), w)
        assert sorted(r.num_generated for r in res.requests) == sorted(lengths.values())
        starts[name] = {r.request_id: r.chunks[0].start_s for r in res.requests}
    assert starts["oracle-group"]["g3-r3"] <= 10.0 < 100 < starts["oracle-group-mean"]["g3-r3"]
    assert starts["oracle-group"]["g3-r0"] < 10 < starts["oracle-divided"]["g3-r0"]
    with pytest.raises(ValueError, match="group_rank"):
        SeerOraclePolicy(group_rank="median")


def test_the_oracle_gives_up_lower_ranked_parked_kv_for_a_longer_new_request():
    # Two instances whose KV holds a few contexts: a request given up earlier comes back as a
    # new one and, with true lengths, outranks parked requests; fresh_evicts
    # (oracle-divided-evict) gives up their KV for it instead of letting it wait for them to end.
    from umbra.sim import lognormal
    from umbra.sim.workload import with_cluster

    step = StepModel(c0=0.05, c_seq=0.001, c_ctx=0.0, c_prefill=0.0001)
    spec = "lognormal:requests=64,max_tokens=256,mean_tokens=80,sigma=1.0,group_share=0.6,prompt_tokens=16"
    w = with_cluster(lognormal.workload(spec, 8, 0, step), 2, 1024, 64)
    lengths = {f"g{g}-r{i}": o for g, grp in enumerate(w.groups) for i, (_, o) in enumerate(grp)}
    runs = {}
    for evicts in (False, True):
        policy = build(variant("oracle-divided-evict" if evicts else "oracle-divided", 16, 16), lengths)
        res = simulate(policy, w)
        assert sorted(r.num_generated for r in res.requests) == sorted(lengths.values())
        runs[evicts] = (res.end_s, policy.ledger.given_up)
    assert policy.fresh_evicts and not build(variant("seer-no-spec", 16, 16), lengths).fresh_evicts
    assert runs[True][1] > runs[False][1]
    assert runs[True][0] < runs[False][0]


def test_lognormal_workload_has_its_shape_and_refuses_bad_specs(capsys):
    import argparse

    from umbra.sim import cli, lognormal
    from umbra.sim.step_model import CPU_SMOLLM2

    w = lognormal.workload("lognormal:requests=400,max_tokens=768,mean_tokens=278,group_share=0.9", 8, 0, CPU_SMOLLM2)
    flat = [o for g in w.groups for _, o in g]
    assert len(w.groups) == 50 and len(flat) == 400 and max(flat) <= 768 and abs(sum(flat) / 400 - 278) < 3
    assert all(len({p for p, _ in g}) == 1 for g in w.groups)  # one prompt per group
    assert w.cluster.instances == 2 and w.cluster.kv_tokens == 32 * w.max_len
    # a group explains most of the spread at group_share 0.9, little at 0.0
    def within_share(ws):
        logs = [[math.log(o) for _, o in g] for g in ws.groups]
        mean = sum(map(sum, logs)) / sum(map(len, logs))
        total = sum((x - mean) ** 2 for g in logs for x in g)
        return sum((x - sum(g) / len(g)) ** 2 for g in logs for x in g) / total
    assert within_share(w) < 0.3 < 0.7 < within_share(
        lognormal.workload("lognormal:requests=400,group_share=0", 8, 0, CPU_SMOLLM2))

    p = argparse.ArgumentParser()
    cli.add_arguments(p)
    assert cli.run(p.parse_args(["--workload", "lognormal:requests=64,max_tokens=128,mean_tokens=40",
                                 "--policies", "verl,seer-no-spec,oracle-divided"])) == 0
    out = capsys.readouterr().out
    assert "64 requests in 8 groups" in out and "oracle-divided" in out
    for bad, msg in (("lognormal:requests=abc", "integer"), ("lognormal:sigma=9", "within"),
                     ("lognormal:colour=red", "KEY=VALUE"), ("lognormal:mean_tokens=900", "below max_tokens"),
                     ("lognormal:requests=100", "divide"), ("lognormal:sigma=nan", "a number")):
        assert cli.run(p.parse_args(["--workload", bad])) == 2, bad
        assert msg in capsys.readouterr().err, bad
    for bad, msg in (("lognormal:requests=16,requests=32", "twice"), ("lognormal:requests=\uff11\uff16", "integer"),
                     ("lognormal:requests=1_6", "integer"), ("lognormal:mean_tokens=1.5,sigma=4", "not reachable")):
        assert cli.run(p.parse_args(["--workload", bad])) == 2, bad
        assert msg in capsys.readouterr().err, bad
    assert cli.run(p.parse_args(["--workload", "lognormal:requests=16", "--instances", "5000"])) == 2
    assert "--instances must be <= 1024" in capsys.readouterr().err
    assert cli.run(p.parse_args(["--workload", "lognormal:requests=16", "--policies", "verl",
                                 "--json", "/proc/umbra-test.json"])) == 2
    assert "cannot write" in capsys.readouterr().err


def test_a_preempted_request_recomputes_only_the_blocks_reused_since():
    # Two 600-token requests of different groups on one instance of 1,000 KV tokens: they fill
    # it at 500 tokens each and the newer one is preempted. vLLM frees its blocks last block
    # first into a least-recently-freed-first queue, so the older one's remaining 116 tokens
    # reuse that many of them; when the older one ends, the preempted one resumes and
    # recomputes those (whole blocks of 16), its prefix still cached.
    step = StepModel(c0=0.01, c_seq=0.001, c_ctx=0.0, c_prefill=1e-4)
    res = simulate(variant_policy("verl"), Workload("p", [[(16, 600)], [(16, 600)]], 600,
                                                    Cluster(1, 1000, 8, step)))
    assert res.preemptions == 1
    first, resumed = res.requests[1].chunks
    held = 16 + first.tokens                # its context when preempted
    reused = 600 - (held - 16)              # what the older request still decoded after that
    assert held > 480 and reused <= resumed.prefill <= reused + 16  # the reused tail, whole blocks


def test_a_given_up_request_finds_what_the_free_queue_has_not_handed_out():
    # Divided rollout on one instance too small for all parked requests: the ledger gives
    # some up. The ledger scheduler puts their blocks after the never-used and done ones, so
    # a returning chunk re-prefills only the part handed out since; charged in full, the
    # re-prefill would be at least the given-up contexts less one token each.
    rnd = random.Random(0)
    groups = [[(32, rnd.choice([40, 80, 300, 600])) for _ in range(4)] for _ in range(8)]
    step = StepModel(c0=0.01, c_seq=0.001, c_ctx=1e-6, c_prefill=1e-4)
    policy = variant_policy("seer-divided")
    res = simulate(policy, Workload("g", groups, 600, Cluster(1, 2400, 64, step)))
    ledger = policy.ledger
    reprefill = rollout_metrics(res.requests, 0.0, res.end_s, 1)["rollout/reprefill_tokens"]
    assert ledger.given_up > 0 and 0 < reprefill < ledger.given_up_tokens - ledger.given_up
    assert all(r.done and sum(c.tokens for c in r.chunks) == r.num_generated for r in res.requests)


@pytest.mark.parametrize("name", ["verl", "seer-divided", "seer-no-spec"])
def test_the_free_queue_never_holds_more_than_the_kv_cache(monkeypatch, name):
    # Prompts of different lengths within a group (as the presets draw them) and a cache that
    # makes verl preempt and the ledger give KV up: what the queue holds stays within the cache.
    from umbra.sim import engine
    from umbra.sim.free_queue import FreeQueue

    peaks = []

    class Checked(FreeQueue):
        def free(self, *args, **kwargs):
            super().free(*args, **kwargs)
            peaks.append(self.held)

    monkeypatch.setattr(engine, "FreeQueue", Checked)
    rnd = random.Random(0)
    groups = [[(32 + 16 * k, rnd.choice([40, 80, 300, 600])) for k in range(4)] for _ in range(8)]
    step = StepModel(c0=0.01, c_seq=0.001, c_ctx=1e-6, c_prefill=1e-4)
    res = simulate(variant_policy(name), Workload("g", groups, 600, Cluster(1, 2400, 64, step)))
    assert peaks and max(peaks) <= 2400
    assert all(r.done for r in res.requests)


def test_ablation_prints_the_true_length_oracle_beside_the_papers(capsys):
    from umbra.sim import cli

    rows = {"verl": 1.0, "seer-divided": 1.1, "seer-no-spec": 1.2, "seer": 1.5, "oracle-divided": 1.25}
    results = {k: {"throughput_vs_verl": v, "throughput_tok_s": 100 * v} for k, v in rows.items()}
    cli.print_paper_ablation(results, "qwen2-vl-72b")
    out = capsys.readouterr().out
    assert "oracle: true lengths, longest first   1.25 | 1.63  (-0.38)" in out
    assert "context-aware / oracle               0.96 | 0.96" in out
    cli.print_paper_ablation(results, "moonlight")  # the paper reports its oracle for Qwen2-VL only
    assert "1.25 |    -" in capsys.readouterr().out
