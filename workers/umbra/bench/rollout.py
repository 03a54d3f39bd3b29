"""``umbra bench rollout``: the same prompts, seeds, model and instances under several
rollout policies, side by side in one process; prints a table and writes JSON.

Grouped speculative decoding needs engines started with a draft proposer, so
variants with ``spec`` run on a second set of instances of the same shape.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

from umbra.bench.variants import build, variant

FIELDS = ("rollout_time_s", "throughput_tok_s", "tail_time_s", "accept_len", "preemptions", "output_tokens",
          "migrations", "reprefill_tokens", "draft_tokens", "decode_tok_s")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default="tiny", help="tiny, smollm2 or a model folder")
    p.add_argument("--data", default="arith", help="'arith' or a GSM8K-style JSONL path")
    p.add_argument("--prompts", type=int, default=32)
    p.add_argument("--group-size", type=int, default=8)
    p.add_argument("--max-tokens", type=int, default=512)
    p.add_argument("--instances", type=int, default=2)
    p.add_argument("--policies", default="static-group,request-lb,seer-no-spec,seer,oracle-lfs")
    p.add_argument("--chunk-tokens", type=int, default=64)
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--kv-cache-gib", type=int, default=1)
    p.add_argument("--max-num-seqs", type=int, default=256)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", dest="json_path", default=None, help="write results here")
    p.add_argument("--trace", dest="trace_path", default=None,
                   help="write per-request records (JSONL, one line per policy and request) here")


def run(args: argparse.Namespace) -> int:
    """Run the benchmark; returns the exit code (2 on bad input)."""
    try:
        variants = [variant(n.strip(), args.chunk_tokens) for n in args.policies.split(",") if n.strip()]
        if not variants:
            raise ValueError("--policies names no policy")
        for flag in ("prompts", "group_size", "max_tokens", "instances", "chunk_tokens", "kv_cache_gib",
                     "max_num_seqs"):
            if getattr(args, flag) < 1:
                raise ValueError(f"--{flag.replace('_', '-')} must be >= 1")
        if not 0.0 <= args.temperature <= 2.0:
            raise ValueError("--temperature must be within [0, 2]")
        for flag, path in (("--json", args.json_path), ("--trace", args.trace_path)):
            if path and not os.path.isdir(os.path.dirname(os.path.abspath(path))):
                raise ValueError(f"{flag}: folder of {path} does not exist")
    except ValueError as exc:
        print(f"umbra bench rollout: {exc}", file=sys.stderr)
        return 2
    import ray
    from transformers import AutoTokenizer

    from umbra.config import PROMPT_BUDGET
    from umbra.data.registry import load_problems
    from umbra.models.prepare import prepare
    from umbra.models.registry import NAMED_MODELS, context_length, resolve_model
    from umbra.rollout.capacity import concurrency_cap
    from umbra.rollout.instance import start_instances
    from umbra.rollout.metrics import engine_metrics, policy_counters, request_records, rollout_metrics
    from umbra.rollout.prompts import encode_prompts
    from umbra.rollout.request import make_groups
    from umbra.rollout.runner import run_rollout
    from umbra.spec.server import start_draft_server

    try:
        path = str(prepare(args.model) if args.model in NAMED_MODELS else resolve_model(args.model))
        ctx = context_length(args.model)
        if args.max_tokens > ctx - PROMPT_BUDGET:
            raise ValueError(f"--max-tokens {args.max_tokens} exceeds what model '{args.model}' allows "
                             f"({ctx - PROMPT_BUDGET})")
        problems = load_problems(args.data, args.seed)
    except (ValueError, FileNotFoundError) as exc:
        print(f"umbra bench rollout: {exc}", file=sys.stderr)
        return 2
    tok = AutoTokenizer.from_pretrained(path)
    prompts = [p for p in encode_prompts(tok, problems) if len(p) <= PROMPT_BUDGET][: args.prompts]
    max_len = min(ctx, max(len(p) for p in prompts) + args.max_tokens)
    cap = concurrency_cap(path, args.kv_cache_gib, max_len, args.max_num_seqs)
    capacities = [cap] * args.instances

    # A fresh local cluster (never a stale one), without a dashboard port to collide on.
    ray.init(address="local", include_dashboard=False, ignore_reinit_error=True, log_to_driver=False)
    sets = {}
    need_spec = any(v.spec for v in variants)
    print(f"model {args.model}: {len(prompts)} prompts x G={args.group_size}, max_tokens {args.max_tokens}, "
          f"{args.instances} instances, concurrency cap {cap}/instance", flush=True)
    sets[False] = (start_instances(args.instances, path, max_len, cap, args.seed, args.kv_cache_gib), None)
    if need_spec:
        server = start_draft_server()
        sets[True] = (start_instances(args.instances, path, max_len, cap, args.seed, args.kv_cache_gib, server),
                      server)
    block = ray.get(sets[False][0][0].ready.remote())["kv_block_tokens"]
    variants = [variant(v.name, args.chunk_tokens, block) for v in variants]
    for insts, server in sets.values():  # warm-up: first requests pay one-off costs
        run_rollout(build(variant("request-lb", args.chunk_tokens), None), insts,
                    make_groups(prompts[:2], 2, 8, args.seed + 1, args.temperature), capacities, server)

    results, lengths = {}, None
    for v in variants:
        insts, server = sets[v.spec]
        groups = make_groups(prompts, args.group_size, args.max_tokens, args.seed, args.temperature)
        policy = build(v, lengths)
        before = ray.get([i.engine_counters.remote() for i in insts])
        reqs, start, end = run_rollout(policy, insts, groups, capacities, server)
        eng = engine_metrics(before, ray.get([i.engine_counters.remote() for i in insts]))
        m = rollout_metrics(reqs, start, end, args.instances)
        m.update(policy_counters(policy))
        if v.policy != "seer" or not v.options.get("divided", True):
            lengths = lengths or {r.request_id: len(r.output_token_ids) for r in reqs}
        results[v.name] = {
            "rollout_time_s": m["rollout/time_s"], "throughput_tok_s": m["rollout/throughput_tok_s"],
            "tail_time_s": m["rollout/tail_time_s"], "accept_len": eng["rollout/spec/accept_len"],
            "preemptions": eng["rollout/preemptions"], "output_tokens": m["rollout/output_tokens"],
            "migrations": m["rollout/migrations"], "reprefill_tokens": m["rollout/reprefill_tokens"],
            "draft_tokens": eng["rollout/spec/draft_tokens"], "decode_tok_s": m["rollout/decode_tok_s"],
        }
        if args.trace_path:
            with open(args.trace_path, "a" if len(results) > 1 else "w") as fh:
                for rec in request_records(reqs, start):
                    fh.write(json.dumps({"policy": v.name, "max_tokens": args.max_tokens, "instances": args.instances,
                                         "capacity": cap, **rec}) + "\n")
        print(f"  {v.name}: {m['rollout/time_s']:.1f}s, {m['rollout/throughput_tok_s']:.0f} tok/s", flush=True)
        add_ratios(results)
        if args.json_path:  # after every policy, so a long benchmark keeps what it measured
            with open(args.json_path, "w") as fh:
                json.dump({"config": vars(args), "concurrency_cap": cap, "results": results}, fh, indent=2)
    print_table(results)
    for insts, _ in sets.values():
        ray.get([i.shutdown.remote() for i in insts])
    return 0


def add_ratios(results: dict) -> None:
    """Add ``throughput_vs_static`` and ``tail_vs_static`` (ratios to static-group) in place."""
    base = results.get("static-group")
    for r in results.values():
        if base:
            r["throughput_vs_static"] = r["throughput_tok_s"] / base["throughput_tok_s"]
            # a baseline without a tail (all requests end together) gives no meaningful ratio
            r["tail_vs_static"] = r["tail_time_s"] / base["tail_time_s"] if base["tail_time_s"] > 1e-3 else None


def print_table(results: dict) -> None:
    cols = ("policy",) + FIELDS + ("throughput_vs_static", "tail_vs_static")
    print(" | ".join(f"{c:>14}" for c in cols))
    for name, r in results.items():
        cells = [name] + [r.get(c) for c in cols[1:]]
        print(" | ".join(f"{c:>14.3f}" if isinstance(c, float) else f"{str(c):>14}" for c in cells))
