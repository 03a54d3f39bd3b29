"""``umbra bench profile``: measure the real engine's step time and fit the simulator's
step model ``T = c0 + c_seq * batch + c_ctx * context_tokens`` (+ ``c_prefill`` per prefilled
token); prints a table and saves the fit as JSON for ``umbra sim --step-model``.

Every instance gets the same batch at the same time, so the fit includes the sharing of
this machine's cores by the instances, as in a real rollout.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys

BATCHES = (1, 2, 4, 8, 16, 31)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default="tiny", help="tiny, smollm2 or a model folder")
    p.add_argument("--instances", type=int, default=2)
    p.add_argument("--batches", default=",".join(map(str, BATCHES)), help="batch sizes to time")
    p.add_argument("--tokens", type=int, default=64, help="decode tokens per request and batch")
    p.add_argument("--prompt-tokens", type=int, default=160,
                   help="prompt length of the timed requests (batches of 4 or more are also timed at 3x, "
                        "so that the per-sequence and per-context-token costs separate)")
    p.add_argument("--kv-cache-gib", type=int, default=1)
    p.add_argument("--out", default="var/step-model.json", help="where to save the fitted step model")
    p.add_argument("--from-trace", default=None, metavar="PATH",
                   help="fit from a recorded rollout (`umbra bench rollout --trace`) instead of timing batches")
    p.add_argument("--trace-policy", default=None, help="with --from-trace: whose records (default: all)")
    p.add_argument("--shared-host", action="store_true",
                   help="with --from-trace: the trace's instances shared one machine (umbra bench rollout): "
                        "also fit c_host, what each sequence decoding on another instance adds to a step")
    p.add_argument("--prefill-from", default=None, metavar="PATH",
                   help="with --from-trace: take c_prefill (seconds per prefilled token) from this step model, "
                        "saved by a timed `umbra bench profile`; a trace's chunks do not record what they prefilled, "
                        "so without it the fit charges preemption recompute and re-prefill nothing")


def run(args: argparse.Namespace) -> int:
    """Run the profile; returns the exit code (2 on bad input)."""
    try:
        batches = sorted({int(b) for b in args.batches.split(",") if b.strip()})
        if not batches or batches[0] < 1:
            raise ValueError("--batches must list sizes >= 1")
        for flag in ("instances", "tokens", "prompt_tokens", "kv_cache_gib"):
            if getattr(args, flag) < 1:
                raise ValueError(f"--{flag.replace('_', '-')} must be >= 1")
        if not args.out or not os.path.isdir(os.path.dirname(os.path.abspath(args.out))) or os.path.isdir(args.out) \
                or not os.access(os.path.dirname(os.path.abspath(args.out)), os.W_OK):
            raise ValueError(f"--out: {args.out!r} is a folder, or its folder does not exist or cannot be written")
        if args.from_trace and (not os.path.isfile(args.from_trace) or os.path.getsize(args.from_trace) > 500_000_000):
            raise ValueError(f"--from-trace: {args.from_trace} is not a regular file of at most 500 MB")
        if args.prefill_from and not args.from_trace:
            raise ValueError("--prefill-from goes with --from-trace (a timed profile measures c_prefill itself)")
    except ValueError as exc:
        print(f"umbra bench profile: {exc}", file=sys.stderr)
        return 2
    if args.from_trace:
        return _from_trace(args)
    import ray

    from umbra.models.prepare import model_folder
    from umbra.models.registry import context_length
    from umbra.rollout.instance import start_instances
    from umbra.rollout.step_probe import step_seconds, timed
    from umbra.sim.step_model import StepModel, fit

    try:
        path = str(model_folder(args.model))
        max_len = min(context_length(args.model), 3 * args.prompt_tokens + args.tokens + 8)
    except (ValueError, FileNotFoundError) as exc:
        print(f"umbra bench profile: {exc}", file=sys.stderr)
        return 2
    ray.init(address="local", include_dashboard=False, ignore_reinit_error=True, log_to_driver=False)
    insts = start_instances(args.instances, path, max_len, max(batches), 0, args.kv_cache_gib)
    timed(insts, 2, 4, 8, 0)  # warm-up
    samples, rows = [], []
    plan = [(b, args.prompt_tokens) for b in batches] + [(b, 3 * args.prompt_tokens) for b in batches if b >= 4]
    for n, (b, plen) in enumerate(plan, 1):
        step, first = step_seconds(insts, b, args.tokens, plen, 10 * n)  # first: prefill + one step
        ctx = b * (plen + args.tokens / 2)
        samples.append((b, ctx, 0.0, step))
        rows.append({"batch": b, "prompt_tokens": plen, "step_s": step, "context_tokens": ctx,
                     "tok_s_per_instance": b / step, "prefill_s": first})
        print(f"batch {b:3d}, prompt {plen:4d}: step {step * 1000:7.1f} ms, {b / step:6.1f} tok/s per instance, "
              f"prefill+1 step {first:.2f} s", flush=True)
    model = fit(samples)
    one = rows[0]
    c_prefill = max(0.0, (one["prefill_s"] - model.seconds(1, args.prompt_tokens)) / args.prompt_tokens)
    model = StepModel(model.c0, model.c_seq, model.c_ctx, c_prefill)
    model.to_json(args.out, model_name=args.model, instances=args.instances, samples=rows)
    print(json.dumps({"c0": model.c0, "c_seq": model.c_seq, "c_ctx": model.c_ctx, "c_prefill": model.c_prefill}))
    print(f"saved {args.out}")
    ray.get([i.shutdown.remote() for i in insts])
    return 0


def _from_trace(args: argparse.Namespace) -> int:
    """Fit the step model to the chunks of a recorded rollout; returns the exit code."""
    from umbra.sim.step_model import StepModel, fit, samples_from_trace

    try:
        with open(args.from_trace) as fh:
            records = [json.loads(line) for line in fh if line.strip()]
        if not all(isinstance(r, dict) for r in records):
            raise ValueError("every line must be a JSON object")
        if args.trace_policy:
            records = [r for r in records if r.get("policy") == args.trace_policy]
            if not records:
                raise ValueError(f"no records of policy {args.trace_policy}")
        samples = samples_from_trace(records, shared_host=args.shared_host)
        model = fit(samples)
        if args.prefill_from:
            model = dataclasses.replace(model, c_prefill=StepModel.from_json(args.prefill_from).c_prefill)
    except (OSError, ValueError, TypeError, KeyError, RecursionError) as exc:
        print(f"umbra bench profile: {args.from_trace}: {str(exc)[:300]}", file=sys.stderr)
        return 2
    model.to_json(args.out, source=args.from_trace, policy=args.trace_policy, samples=len(samples),
                  prefill_from=args.prefill_from)
    print(json.dumps({"c0": model.c0, "c_seq": model.c_seq, "c_ctx": model.c_ctx, "c_prefill": model.c_prefill,
                      "c_host": model.c_host, "samples": len(samples)}))
    print(f"saved {args.out}")
    return 0
