"""``umbra bench rollout``: the same prompts, seeds, model and instances under several
rollout policies, side by side in one process; prints a table and writes JSON.

Speculative decoding is chosen when an engine starts, so variants with another method
(``Variant.speculation``) run on another set of instances of the same shape, started in turn.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time

from umbra.rollout.policies.variants import (DEFAULT_VARIANTS, KV_RESERVES, add_ratios, build, oracle_length_source,
                                             policy_names, variant)

FIELDS = ("rollout_time_s", "throughput_tok_s", "tail_time_s", "accept_len", "preemptions", "output_tokens",
          "migrations", "kv_given_up", "reprefill_tokens", "draft_tokens", "decode_tok_s")
MAX_EPOCHS = 100
SPEC_EXTRAS = ("rollout/spec/drafting_steps_frac", "rollout/spec/step_cost_ms", "rollout/spec/row_cost_ms",
               "rollout/spec/context_cost_us", "rollout/spec/draft_cost_ms",
               "rollout/spec/history_mb", "rollout/spec/seeded_groups")
RATIOS = ("throughput_vs_verl", "tail_vs_verl", "throughput_vs_static", "tail_vs_static")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default="tiny", help="tiny, smollm2 or a model folder")
    p.add_argument("--data", default="arith", help="'arith' or a GSM8K-style JSONL path")
    p.add_argument("--prompts", type=int, default=32)
    p.add_argument("--group-size", type=int, default=8)
    p.add_argument("--max-tokens", type=int, default=512)
    p.add_argument("--instances", type=int, default=2)
    p.add_argument("--policies", default=",".join(DEFAULT_VARIANTS),
                   help="comma-separated; a seer variant may carry its own KV reserve, e.g. "
                        "seer-no-spec@estimate,seer-no-spec@adaptive")
    p.add_argument("--chunk-tokens", type=int, default=64)
    p.add_argument("--kv-reserve", choices=KV_RESERVES, default="auto",
                   help="seer: KV kept free for parked requests when admitting a new one: auto (estimate where the "
                        "engines' step time grows in proportion to the batch, as on CPU, else adaptive; measured "
                        "before the first rollout), adaptive (one chunk each until the instance first gives up KV, "
                        "their group estimates from then on), estimate, chunk (one chunk each) or none")
    p.add_argument("--balance-spread", type=int, default=None,
                   help="seer: move a parked request to an instance holding this many fewer requests (ours; default "
                        "off; 0 also means off)")
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--kv-cache-gib", type=int, default=1)
    p.add_argument("--max-num-seqs", type=int, default=256)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--epochs", type=int, default=1,
                   help="rollouts per policy over the same prompts (fresh seeds each; one policy object, so "
                        "seer-history remembers earlier epochs); the table shows the last epoch")
    p.add_argument("--interleave", action="store_true",
                   help="start every engine set at once and run epoch e of every policy before epoch e + 1 of any "
                        "(fairer on a noisy machine; needs the memory of every set at once)")
    p.add_argument("--json", dest="json_path", default=None, help="write results here")
    p.add_argument("--trace", dest="trace_path", default=None,
                   help="write per-request records (JSONL, one line per policy and request) here")


def run(args: argparse.Namespace) -> int:
    """Run the benchmark; returns the exit code (2 on bad input)."""
    try:
        variants = [variant(n, args.chunk_tokens, kv_reserve=args.kv_reserve, balance_spread=args.balance_spread)
                    for n in policy_names(args.policies)]
        if not args.interleave:  # one engine set at a time: variants run grouped by speculation method
            variants = sorted(variants, key=lambda v: [x.speculation for x in variants].index(v.speculation))
        for n, v in enumerate(variants):
            if v.policy == "seer-oracle" and not any(x.policy == "seer" and oracle_length_source(x, True)
                                                     for x in variants[:n]):
                raise ValueError(f"policy '{v.name}' ranks by the lengths a chunked rollout of the same seeds "
                                 "produced: put a seer variant without speculation that divides requests into "
                                 "chunks (e.g. seer-no-spec or seer-divided) before it in --policies")
        for flag in ("prompts", "group_size", "max_tokens", "instances", "chunk_tokens", "kv_cache_gib",
                     "max_num_seqs", "epochs"):
            if getattr(args, flag) < 1:
                raise ValueError(f"--{flag.replace('_', '-')} must be >= 1")
        if not 0.0 <= args.temperature <= 2.0:
            raise ValueError("--temperature must be within [0, 2]")
        if args.epochs > MAX_EPOCHS:
            raise ValueError(f"--epochs must be <= {MAX_EPOCHS}")
        for flag, path in (("--json", args.json_path), ("--trace", args.trace_path)):
            if path and (os.path.isdir(path) or not os.path.isdir(os.path.dirname(os.path.abspath(path)))):
                raise ValueError(f"{flag}: {path} is a folder or its folder does not exist")
    except ValueError as exc:
        print(f"umbra bench rollout: {exc}", file=sys.stderr)
        return 2
    import ray
    from transformers import AutoTokenizer

    from umbra.config import PROMPT_BUDGET
    from umbra.data.source import DataSource
    from umbra.models.prepare import model_folder
    from umbra.models.registry import context_length
    from umbra.rollout.manager import RolloutManager, RolloutShape

    try:
        path = str(model_folder(args.model))
        ctx = context_length(args.model)
        if args.max_tokens > ctx - PROMPT_BUDGET:
            raise ValueError(f"--max-tokens {args.max_tokens} exceeds what model '{args.model}' allows "
                             f"({ctx - PROMPT_BUDGET})")
        tok = AutoTokenizer.from_pretrained(path)
        data = DataSource.from_dataset(args.data, tok, PROMPT_BUDGET, args.prompts, args.seed)
    except (ValueError, FileNotFoundError) as exc:
        print(f"umbra bench rollout: {exc}", file=sys.stderr)
        return 2
    prompts = [item.token_ids for item in data.items[: args.prompts]]  # the same for every policy
    shape = RolloutShape.fit(path, ctx, max(len(p) for p in prompts), args.group_size, args.max_tokens,
                             args.temperature, args.kv_cache_gib, args.max_num_seqs)

    # A fresh local cluster (never a stale one), without a dashboard port to collide on.
    ray.init(address="local", include_dashboard=False, ignore_reinit_error=True, log_to_driver=False)
    print(f"model {args.model}: {len(prompts)} prompts x G={args.group_size}, max_tokens {args.max_tokens}, "
          f"{args.instances} instances, concurrency cap {shape.capacity}/instance", flush=True)
    # Speculation is chosen when an engine starts: one set of instances per method. By default a
    # method's set starts when its first variant comes (variants keep their order within a
    # method) and stops before the next method's, so one set holds memory at a time; with
    # --interleave every set is up at once and epoch e of every variant runs before epoch e + 1
    # of any, so this machine's drift reaches every variant alike (memory: every set at once).
    managers: dict = {}
    warm = dataclasses.replace(shape, group_size=2, max_tokens=8)

    def manager_for(speculation):
        if speculation not in managers:
            if not args.interleave:
                for m in managers.values():
                    m.shutdown()
                managers.clear()
            m = managers[speculation] = RolloutManager.start(path, args.instances, shape, args.seed,
                                                             speculation=speculation)
            # warm-up: first requests pay one-off costs
            m.generate(-1, prompts[:2], args.seed + 1, build(variant("request-lb", args.chunk_tokens), None), warm)
        return managers[speculation]

    if args.interleave:
        kinds = list(dict.fromkeys(v.speculation for v in variants))
        from umbra.rollout.instance import INSTANCE_CPUS

        need, have = len(kinds) * args.instances * INSTANCE_CPUS, ray.cluster_resources().get("CPU", 0)
        if need > have:  # Ray would wait for the CPUs forever
            print(f"umbra bench rollout: --interleave needs {len(kinds)} engine sets x {args.instances} instances x "
                  f"{INSTANCE_CPUS} CPU = {need:g} CPUs at once; this cluster has {have:g} (run the speculation "
                  "methods apart, or without --interleave)", file=sys.stderr)
            return 2
        for speculation in kinds:
            manager_for(speculation)
    block = manager_for(variants[0].speculation).kv_block_tokens()
    variants = [variant(v.name, args.chunk_tokens, block, args.kv_reserve, args.balance_spread) for v in variants]
    policies = {v.name: build(v, None) for v in variants}  # one object per variant across epochs
    schedule = ([(e, v) for e in range(args.epochs) for v in variants] if args.interleave
                else [(e, v) for v in variants for e in range(args.epochs)])
    if any(m.draft_server is not None for m in managers.values()):
        import ray

        ray.get([m.draft_server.clear_history.remote() for m in managers.values() if m.draft_server is not None])
    results, epochs = {}, {}
    # epoch -> true lengths, whole (for oracle-lfs) and chunked (for the chunked oracles): from the
    # epoch's first rollout that samples what the oracle will (oracle_length_source)
    lengths: dict[bool, dict[int, dict]] = {False: {}, True: {}}
    for e, v in schedule:
        manager = manager_for(v.speculation)
        manager.spec_history, manager.history_key = v.history, v.name  # each variant its own history
        oracle = {"oracle-lfs": False, "seer-oracle": True}.get(v.policy)  # which lengths it ranks by
        if oracle is not None:
            policies[v.name] = build(v, lengths[oracle].get(e))
        batch = manager.generate(e, prompts, args.seed + 1000 * e, policies[v.name])
        for chunked in (False, True):
            if oracle_length_source(v, chunked):
                lengths[chunked].setdefault(e, {r.request_id: r.num_generated for r in batch.requests})
        epochs.setdefault(v.name, []).append(row(batch, policies[v.name]))
        if oracle:  # a chunked oracle: how many lengths came out as it ranked them
            epochs[v.name][-1]["matched_lengths"] = sum(r.num_generated == lengths[True][e].get(r.request_id)
                                                        for r in batch.requests)
        print(f"  {v.name}" + (f" epoch {e + 1}" if args.epochs > 1 else "") +
              f": {batch.metrics['rollout/time_s']:.1f}s, {batch.metrics['rollout/throughput_tok_s']:.0f} tok/s, "
              f"tail {batch.metrics['rollout/tail_time_s']:.1f}s"
              + (f", accept len {batch.metrics['rollout/spec/accept_len']:.2f}" if v.spec else "")
              + "".join(f", {k.rsplit('/', 1)[1]} {batch.metrics[k]:.3g}"
                        for k in SPEC_EXTRAS if k in batch.metrics)
              + (f", kv reserve {epochs[v.name][-1]['kv_reserve']}" if "kv_reserve" in epochs[v.name][-1] else "")
              + (f" (previous fill {epochs[v.name][-1]['previous_fill']:.2f})"
                 if "previous_fill" in epochs[v.name][-1] else "")
              + (f", lengths as ranked {epochs[v.name][-1]['matched_lengths']} of {len(batch.requests)}"
                 if "matched_lengths" in epochs[v.name][-1] else "")
              + (f", re-prefilled {batch.metrics['rollout/reprefill_tokens']:.0f} tokens "
                 f"({reprefill_pct(epochs[v.name][-1]):.1f}%)" if batch.metrics["rollout/reprefill_tokens"] else ""),
              flush=True)
        if e < args.epochs - 1:
            continue
        results[v.name] = dict(epochs[v.name][-1])
        if args.trace_path:
            with open(args.trace_path, "a" if len(results) > 1 else "w") as fh:
                for rec in batch.trace:
                    fh.write(json.dumps({"policy": v.name, "max_tokens": args.max_tokens, "instances": args.instances,
                                         "capacity": shape.capacity, **rec}) + "\n")
        add_ratios(results)
        if args.json_path:  # after every policy, so a long benchmark keeps what it measured
            with open(args.json_path, "w") as fh:
                json.dump({"config": vars(args), "concurrency_cap": shape.capacity, "results": results,
                           **({"epochs": epochs} if args.epochs > 1 else {})}, fh, indent=2)
    print_table(results)
    if args.epochs > 1:
        print_epochs(epochs)
    for m in managers.values():
        m.shutdown()
    return 0


def row(batch, policy=None) -> dict:
    """One rollout's row of the table; a seer policy adds the KV reserve it ran with and, where
    it chose it ("auto"), the previous rollout's fill and the engines' step time it chose by."""
    m = batch.metrics
    extra = {}
    if getattr(policy, "ledger", None) is not None:
        extra["kv_reserve"] = str(policy.reserve_mode)
        step = policy.engine_step if policy.growth_reserve == "auto" else None
        if policy.growth_reserve == "auto" and policy.previous_fill is not None:
            extra["previous_fill"] = policy.previous_fill  # what "auto" weighed first
        if step is not None:
            extra["engine_step_ms"] = {"c0": 1000 * step.c0, "per_sequence": 1000 * step.c_row}
    return {**extra,
        "rollout_time_s": m["rollout/time_s"], "throughput_tok_s": m["rollout/throughput_tok_s"],
        "tail_time_s": m["rollout/tail_time_s"], "accept_len": m["rollout/spec/accept_len"],
        "preemptions": m["rollout/preemptions"], "output_tokens": m["rollout/output_tokens"],
        "migrations": m["rollout/migrations"], "kv_given_up": m["rollout/kv_given_up"],
        "reprefill_tokens": m["rollout/reprefill_tokens"], "lengths": length_distribution(batch.requests),
        "draft_tokens": m["rollout/spec/draft_tokens"], "decode_tok_s": m["rollout/decode_tok_s"],
        # grouped speculation: Alg. 1's choices and cost fit, the draft history's size
        **{k.rsplit("/", 1)[1]: m[k] for k in SPEC_EXTRAS if k in m},
    }


def print_epochs(epochs: dict) -> None:
    """Every epoch's throughput and tail per variant, and their medians (the table above holds
    the last epoch only)."""
    import statistics

    print("per epoch (throughput tok/s / tail s / re-prefilled tokens, % of output):")
    for name, rows in epochs.items():
        cells = ", ".join(f"{r['throughput_tok_s']:.0f} / {r['tail_time_s']:.1f} / {reprefill_pct(r):.1f}%" for r in rows)
        print(f"  {name}: {cells}; median {statistics.median(r['throughput_tok_s'] for r in rows):.0f} / "
              f"{statistics.median(r['tail_time_s'] for r in rows):.1f}")


def reprefill_pct(row: dict) -> float:
    """Re-prefilled tokens of a rollout's row, in % of its output tokens."""
    return 100 * row["reprefill_tokens"] / max(1.0, row["output_tokens"])


def length_distribution(requests) -> dict:
    """Response lengths of one rollout: mean, p50, p90, max and the clip ratio (cut at max_tokens)."""
    lens = sorted(r.num_generated for r in requests)
    n = len(lens)
    return {"mean": sum(lens) / n, "p50": lens[n // 2], "p90": lens[min(n - 1, int(0.9 * n))], "max": lens[-1],
            "clip_ratio": sum(r.clipped for r in requests) / n}


def print_table(results: dict) -> None:
    cols = ("policy",) + FIELDS + RATIOS
    print(" | ".join(f"{c:>14}" for c in cols))
    for name, r in results.items():
        cells = [name] + [r.get(c) for c in cols[1:]]
        # "-": no ratio (the baseline did not run, or its tail is 0)
        print(" | ".join(f"{c:>14.3f}" if isinstance(c, float) else f"{'-' if c is None else str(c):>14}"
                         for c in cells))
    print("response lengths (tokens):")
    for name, r in results.items():
        d = r["lengths"]
        print(f"  {name}: mean {d['mean']:.0f}, p50 {d['p50']}, p90 {d['p90']}, max {d['max']}, "
              f"clipped {100 * d['clip_ratio']:.0f}%")
