"""Simulate one rollout iteration under several named policies side by side (the library
behind ``umbra sim`` and the what-if page)."""
from __future__ import annotations

import time

from umbra.rollout.policies.variants import add_ratios


def trace_cluster_workload(rows: list[dict], policy: str | None, instances: int | None, kv_tokens: int | None,
                           max_batch: int | None, step, name: str):
    """A trace's workload on the cluster it was recorded on (its ``instances`` and ``capacity``
    fields; 2 and 32 when absent) unless overridden; KV = capacity x longest context."""
    from umbra.sim.workload import Cluster, workload_from_rows

    chosen = policy if policy is not None else rows[0]["policy"]
    first = next((r for r in rows if r["policy"] == chosen), rows[0])  # the chosen policy's cluster
    inst = instances or first["instances"] or 2
    batch = max_batch or first["capacity"] or 32
    w = workload_from_rows(rows, Cluster(inst, 1, batch, step), policy, None, name)
    w.cluster = Cluster(inst, kv_tokens or batch * w.max_len, batch, step)
    return w


def simulate_policies(workload, names: list[str], chunk_tokens: int, spec, shared_kv: bool,
                      kv_reserve: str = "auto", balance_spread: int | None = None) -> dict:
    """Per policy name: the result row (see FIELDS) plus ``wall_s`` and ``requests`` (records)."""
    from umbra.rollout.policies.variants import build, variant
    from umbra.rollout.metrics import policy_counters, request_records, rollout_metrics
    from umbra.sim.engine import KV_BLOCK_TOKENS, simulate

    lengths = {f"g{g}-r{i}": o for g, grp in enumerate(workload.groups) for i, (_, o) in enumerate(grp)}
    block = KV_BLOCK_TOKENS  # chunk ends aligned as on CUDA engines
    out = {}
    for name in names:
        v = variant(name, chunk_tokens, block, kv_reserve, balance_spread)
        t0 = time.perf_counter()
        policy = build(v, lengths)
        res = simulate(policy, workload, spec if v.spec else None, shared_kv)
        m = rollout_metrics(res.requests, 0.0, res.end_s, workload.cluster.instances)
        out[name] = {
            "rollout_time_s": m["rollout/time_s"], "throughput_tok_s": m["rollout/throughput_tok_s"],
            "tail_time_s": m["rollout/tail_time_s"], "idle_frac": m["rollout/instance_idle_frac"],
            "preemptions": res.preemptions, "migrations": getattr(policy, "migrations", 0),
            "kv_given_up": int(policy_counters(policy)["rollout/kv_given_up"]),
            "reprefill_tokens": m["rollout/reprefill_tokens"], "output_tokens": m["rollout/output_tokens"],
            "kv_peak_frac": res.kv_peak_frac, "capacity": res.capacity, "wall_s": time.perf_counter() - t0,
            "records": request_records(res.requests, 0.0),
        }
    add_ratios(out)
    return out


def versus_trace(rows: list[dict], names: list[str], chunk_tokens: int, spec, shared_kv: bool, kv_reserve: str,
                 instances: int | None, kv_tokens: int | None, max_batch: int | None, step, check=None,
                 balance_spread: int | None = None) -> dict:
    """Each policy of ``names`` recorded in the trace, simulated on its own recorded requests
    and cluster, beside what was measured: per policy ``{"sim_time_s", "real_time_s",
    "time_ratio", "sim_tail_s", "real_tail_s", "tail_ratio", "sim_p90_s", "real_p90_s",
    "p90_ratio"}`` (sim / real; p90: when 90% of the requests had finished, where the tail
    starts, so a tail's error shows as the start's or the end's). Policies
    without records, or whose records carry no ``finish_s``, are left out. Every policy's
    workload is built, and passed to ``check`` (which raises ValueError to refuse it), before
    any is simulated; a bad one raises ValueError."""
    from umbra.rollout.metrics import tail_time
    from umbra.sim.workload import trace_policies

    recorded, chosen = set(trace_policies(rows)), []
    for name in names:
        mine = [r for r in rows if r["policy"] == name]
        if name not in recorded or any(r["finish_s"] is None for r in mine):
            continue
        w = trace_cluster_workload(rows, name, instances, kv_tokens, max_batch, step, f"trace:{name}")
        if check is not None:
            check(w)
        chosen.append((name, mine, w))
    out = {}
    for name, mine, w in chosen:
        sim = simulate_policies(w, [name], chunk_tokens, spec, shared_kv, kv_reserve, balance_spread)[name]
        finishes = [r["finish_s"] for r in mine]
        real_time, real_tail = max(finishes), tail_time(0.0, finishes)
        out[name] = {"sim_time_s": sim["rollout_time_s"], "real_time_s": real_time,
                     "time_ratio": sim["rollout_time_s"] / real_time if real_time > 0 else None,
                     "sim_tail_s": sim["tail_time_s"], "real_tail_s": real_tail,
                     "tail_ratio": sim["tail_time_s"] / real_tail if real_tail > 1e-3 else None}
        sim_p90, real_p90 = sim["rollout_time_s"] - sim["tail_time_s"], real_time - real_tail
        out[name].update({"sim_p90_s": sim_p90, "real_p90_s": real_p90,
                          "p90_ratio": sim_p90 / real_p90 if real_p90 > 1e-3 else None})
    return out
