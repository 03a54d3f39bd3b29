"""``umbra bench rollout``: the same prompts, seeds, model and instances under several
rollout policies, side by side in one process; prints a table and writes JSON.

Grouped speculative decoding needs engines started with a draft proposer, so
variants with ``spec`` run on a second set of instances of the same shape.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time

from umbra.rollout.policies.variants import DEFAULT_VARIANTS, KV_RESERVES, add_ratios, build, variant

FIELDS = ("rollout_time_s", "throughput_tok_s", "tail_time_s", "accept_len", "preemptions", "output_tokens",
          "migrations", "kv_given_up", "reprefill_tokens", "draft_tokens", "decode_tok_s")
MAX_EPOCHS = 100
RATIOS = ("throughput_vs_verl", "tail_vs_verl", "throughput_vs_static", "tail_vs_static")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default="tiny", help="tiny, smollm2 or a model folder")
    p.add_argument("--data", default="arith", help="'arith' or a GSM8K-style JSONL path")
    p.add_argument("--prompts", type=int, default=32)
    p.add_argument("--group-size", type=int, default=8)
    p.add_argument("--max-tokens", type=int, default=512)
    p.add_argument("--instances", type=int, default=2)
    p.add_argument("--policies", default=",".join(DEFAULT_VARIANTS))
    p.add_argument("--chunk-tokens", type=int, default=64)
    p.add_argument("--kv-reserve", choices=KV_RESERVES, default="adaptive",
                   help="seer: KV kept free for parked requests when admitting a new one: one chunk each, "
                        "their group estimates, one chunk until the instance first gives up KV and the estimate "
                        "from then on (adaptive), or none")
    p.add_argument("--balance-spread", type=int, default=None,
                   help="seer: move a parked request to an instance holding this many fewer requests (ours; default off)")
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--kv-cache-gib", type=int, default=1)
    p.add_argument("--max-num-seqs", type=int, default=256)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--epochs", type=int, default=1,
                   help="rollouts per policy over the same prompts (fresh seeds each; one policy object, so "
                        "seer-history remembers earlier epochs); the table shows the last epoch")
    p.add_argument("--json", dest="json_path", default=None, help="write results here")
    p.add_argument("--trace", dest="trace_path", default=None,
                   help="write per-request records (JSONL, one line per policy and request) here")


def run(args: argparse.Namespace) -> int:
    """Run the benchmark; returns the exit code (2 on bad input)."""
    try:
        variants = [variant(n.strip(), args.chunk_tokens, kv_reserve=args.kv_reserve, balance_spread=args.balance_spread)
                    for n in args.policies.split(",") if n.strip()]
        if not variants:
            raise ValueError("--policies names no policy")
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
    from umbra.models.prepare import prepare
    from umbra.models.registry import NAMED_MODELS, context_length, resolve_model
    from umbra.rollout.manager import RolloutManager, RolloutShape

    try:
        path = str(prepare(args.model) if args.model in NAMED_MODELS else resolve_model(args.model))
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
    # Grouped speculation needs engines started with the draft proposer: a second set of the same shape.
    managers = {spec: RolloutManager.start(path, args.instances, shape, args.seed, speculative=spec)
                for spec in sorted({v.spec for v in variants} | {False})}
    block = managers[False].kv_block_tokens()
    variants = [variant(v.name, args.chunk_tokens, block, args.kv_reserve, args.balance_spread) for v in variants]
    warm = dataclasses.replace(shape, group_size=2, max_tokens=8)
    for m in managers.values():  # warm-up: first requests pay one-off costs
        m.generate(-1, prompts[:2], args.seed + 1, build(variant("request-lb", args.chunk_tokens), None), warm)

    results, epochs = {}, {}
    lengths: dict[int, dict] = {}  # epoch -> true lengths, for oracle-lfs (from a whole-request policy)
    for v in variants:
        policy = build(v, None)
        for e in range(args.epochs):
            if v.policy == "oracle-lfs":
                policy = build(v, lengths.get(e))
            batch = managers[v.spec].generate(e, prompts, args.seed + 1000 * e, policy)
            if v.policy != "seer" or not v.options.get("divided", True):
                lengths.setdefault(e, {r.request_id: r.num_generated for r in batch.requests})
            epochs.setdefault(v.name, []).append(row(batch))
            print(f"  {v.name}" + (f" epoch {e + 1}" if args.epochs > 1 else "") +
                  f": {batch.metrics['rollout/time_s']:.1f}s, {batch.metrics['rollout/throughput_tok_s']:.0f} tok/s",
                  flush=True)
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
    for m in managers.values():
        m.shutdown()
    return 0


def row(batch) -> dict:
    """One rollout's row of the table."""
    m = batch.metrics
    return {
        "rollout_time_s": m["rollout/time_s"], "throughput_tok_s": m["rollout/throughput_tok_s"],
        "tail_time_s": m["rollout/tail_time_s"], "accept_len": m["rollout/spec/accept_len"],
        "preemptions": m["rollout/preemptions"], "output_tokens": m["rollout/output_tokens"],
        "migrations": m["rollout/migrations"], "kv_given_up": m["rollout/kv_given_up"],
        "reprefill_tokens": m["rollout/reprefill_tokens"], "lengths": length_distribution(batch.requests),
        "draft_tokens": m["rollout/spec/draft_tokens"], "decode_tok_s": m["rollout/decode_tok_s"],
    }


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
