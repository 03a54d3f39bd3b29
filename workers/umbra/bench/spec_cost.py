"""``umbra bench spec-cost``: what speculative decoding's machinery costs an engine step when
nothing is drafted, per method, side by side; prints a table and writes JSON.

One engine per method (``none``: no speculation; ``null``: vLLM's speculative path with a
proposer that never drafts; ``grouped``: ours, fed by a draft server, with groups that have
nothing to draft from yet; ``ngram``: vLLM's prompt lookup, as it runs; ``draft<g>``: g draft
tokens on every row, rejected, so each step verifies ``g * batch`` drafts), the same batches of
distinct random prompts (no prefix-cache hits) timed on each in turn, repeated, so that this
machine's drift hits every method alike. A step is ``(time of N tokens - time of 1 token) /
(N - 1)``; the 1-token time (prefill + one step + the chunk's draft refresh) is printed too.
With ``none`` and some ``draft<g>`` timed, the step cost ``c0 + c_row * rows + c_draft * draft
tokens`` (Alg. 1's model, ``umbra.speculative.draft_length.StepCost``) is fitted to them by
least squares and printed: what a row and a verified draft token cost on this machine.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

KINDS = ("none", "null", "grouped", "ngram", "draft1", "draft2", "draft4", "draft8")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default="tiny", help="tiny, smollm2 or a model folder")
    p.add_argument("--kinds", default=",".join(KINDS), help=f"speculation methods to time ({', '.join(KINDS)})")
    p.add_argument("--batches", default="1,8,32", help="batch sizes to time")
    p.add_argument("--tokens", type=int, default=96, help="decode tokens per request (ignore_eos)")
    p.add_argument("--prompt-tokens", type=int, default=128)
    p.add_argument("--repeats", type=int, default=3, help="rounds over every batch and method")
    p.add_argument("--kv-cache-gib", type=int, default=1)
    p.add_argument("--json", dest="json_path", default=None, help="write results here")


def run(args: argparse.Namespace) -> int:
    """Run the measurement; returns the exit code (2 on bad input)."""
    try:
        kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
        if not kinds or any(k not in KINDS for k in kinds):
            raise ValueError(f"--kinds must list some of {', '.join(KINDS)}")
        batches = sorted({int(b) for b in args.batches.split(",") if b.strip()})
        if not batches or batches[0] < 1:
            raise ValueError("--batches must list sizes >= 1")
        for flag in ("tokens", "prompt_tokens", "repeats", "kv_cache_gib"):
            if getattr(args, flag) < (2 if flag == "tokens" else 1):
                raise ValueError(f"--{flag.replace('_', '-')} is too small")
        if args.json_path and (os.path.isdir(args.json_path)
                               or not os.path.isdir(os.path.dirname(os.path.abspath(args.json_path)))):
            raise ValueError(f"--json: {args.json_path} is a folder or its folder does not exist")
    except ValueError as exc:
        print(f"umbra bench spec-cost: {exc}", file=sys.stderr)
        return 2
    import ray

    from umbra.models.prepare import model_folder
    from umbra.models.registry import context_length
    from umbra.rollout.instance import start_instances
    from umbra.speculative.server import start_draft_server

    try:
        path = str(model_folder(args.model))
        max_len = min(context_length(args.model), args.prompt_tokens + args.tokens + 16)
    except (ValueError, FileNotFoundError) as exc:
        print(f"umbra bench spec-cost: {exc}", file=sys.stderr)
        return 2
    ray.init(address="local", include_dashboard=False, ignore_reinit_error=True, log_to_driver=False)
    engines = {}
    for k in kinds:
        server = start_draft_server() if k == "grouped" else None
        engines[k] = start_instances(1, path, max_len, max(batches), 0, args.kv_cache_gib, server,
                                     speculation=None if k in ("none", "grouped") else k)[0]
    salt = iter(range(1, 1 << 30))

    def timed(inst, batch: int, tokens: int) -> float:
        """Seconds until ``batch`` requests of ``tokens`` tokens, each of its own random prompt, finished."""
        s = next(salt)
        prompt = lambda j: [1 + (s * 7919 + j * 104729 + t * 31) % 5000 for t in range(args.prompt_tokens)]  # noqa: E731
        t0 = time.time()
        ray.get([inst.generate_chunk.remote(f"c{s}-{j}", s * 1000 + j, prompt(j), [], tokens, j, 1.0, True)
                 for j in range(batch)])
        return time.time() - t0

    for inst in engines.values():
        timed(inst, 2, 4)  # warm-up
    steps: dict = {k: {b: [] for b in batches} for k in kinds}
    firsts: dict = {k: {b: [] for b in batches} for k in kinds}
    for rep in range(args.repeats):
        for b in batches:
            for k in (kinds if rep % 2 == 0 else kinds[::-1]):  # alternate the order: no method always first
                full, first = timed(engines[k], b, args.tokens), timed(engines[k], b, 1)
                steps[k][b].append((full - first) / (args.tokens - 1))
                firsts[k][b].append(first)
        print(f"round {rep + 1}/{args.repeats} done", flush=True)
    counters = {k: ray.get(engines[k].engine_counters.remote()) for k in kinds}
    results = {k: {str(b): {"step_ms": 1000 * statistics.median(steps[k][b]),
                            "step_ms_all": [1000 * x for x in steps[k][b]],
                            "first_token_s": statistics.median(firsts[k][b])} for b in batches}
               for k in kinds}
    for k in kinds:
        for b in batches:
            base = results.get("none", {}).get(str(b))
            results[k][str(b)]["vs_none"] = results[k][str(b)]["step_ms"] / base["step_ms"] if base else None
        results[k]["draft_tokens"] = counters[k]["spec_draft_tokens"]
    print(f"{'method':>8} | " + " | ".join(f"{'batch ' + str(b) + ' step ms':>17} | {'vs none':>7}" for b in batches)
          + " | drafted tokens")
    for k in kinds:
        cells = []
        for b in batches:
            r = results[k][str(b)]
            cells.append(f"{r['step_ms']:17.1f} | " + (f"{r['vs_none']:7.3f}" if r["vs_none"] else f"{'-':>7}"))
        print(f"{k:>8} | " + " | ".join(cells) + f" | {int(results[k]['draft_tokens'])}")
    fit = fit_step_cost(results)
    if fit:
        print(f"step cost fit (none, draft<g>): {1000 * fit['c0_s']:.1f} ms + {1000 * fit['row_s']:.2f} ms per row"
              f" + {1000 * fit['draft_s']:.2f} ms per verified draft token")
    if args.json_path:
        with open(args.json_path, "w") as fh:
            json.dump({"config": vars(args), "results": results, "fit": fit}, fh, indent=2)
    for inst in engines.values():
        ray.get(inst.shutdown.remote())
    return 0


def fit_step_cost(results: dict) -> dict | None:
    """Least-squares ``(c0, c_row, c_draft)`` over the ``none`` and ``draft<g>`` steps of
    ``results`` (``{kind: {batch: {"step_ms": ...}}}``); None without ``none`` and one ``draft<g>``."""
    import numpy as np

    xs, ys = [], []
    for kind, by_batch in results.items():
        if kind != "none" and not kind.startswith("draft"):
            continue
        g = 0 if kind == "none" else int(kind.removeprefix("draft"))
        for b, r in by_batch.items():
            if b.isdigit():
                xs.append((1.0, int(b), int(b) * g))
                ys.append(r["step_ms"] / 1000)
    if "none" not in results or not any(k.startswith("draft") for k in results) or len(ys) < 3:
        return None
    (c0, c_row, c_draft), *_ = np.linalg.lstsq(np.array(xs), np.array(ys), rcond=None)
    return {"c0_s": float(c0), "row_s": float(c_row), "draft_s": float(c_draft)}
