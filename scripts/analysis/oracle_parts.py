"""What the chunked oracle's lead is made of: the order, or the KV reserve? (analysis, ours)

``oracle-divided`` knows every request's true length and uses it twice: it ranks longest first
(the order in which requests start and continue) and it reserves each resident's KV growth to
its true end (how many requests run at once without giving KV up). This simulates the two
apart on the same workload and seeds, beside the default (Alg. 2's group estimates) and the
baselines:

- ``order only``: true lengths rank, the reserve counts every resident to ``max_tokens`` (what
  it would know of a request it cannot predict);
- ``reserve only``: true lengths reserve, the order is flat (a started request before a new
  one, then first come: no ranking);
- ``random order``: a fixed random rank per request, the reserve to ``max_tokens``: what an
  order that knows nothing gives.

So the gap from the default to ``order only`` is what a per-request length predictor known
before a request starts could win, with no more concurrency and nothing given up.

    PYTHONPATH=workers .venv/bin/python scripts/analysis/oracle_parts.py \\
        --workload lognormal:requests=256,max_tokens=512,mean_tokens=352,sigma=0.8,group_share=0.1 \\
        --instances 2 --kv-tokens 22784 --max-batch 256 --chunk-tokens 64 \\
        --step-model var/bench/step-fixed.json --seeds 6 --json var/bench/oracle-parts.json
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics

from umbra.rollout.metrics import rollout_metrics
from umbra.rollout.policies.seer_oracle import SeerOraclePolicy
from umbra.rollout.policies.variants import build, variant
from umbra.sim import lognormal
from umbra.sim.engine import KV_BLOCK_TOKENS, simulate
from umbra.sim.step_model import CPU_SMOLLM2, StepModel
from umbra.sim.workload import preset_workload, with_cluster


class OrderOnly(SeerOraclePolicy):
    """True lengths rank; each resident's growth is reserved to ``max_tokens``."""

    def _final_estimate(self, r):
        return r.max_tokens


class ReserveOnly(SeerOraclePolicy):
    """True lengths reserve; no ranking (a started request first, then first come)."""

    def _key(self, r):
        return (1, 0, 0 if r.num_generated else 1)


class RandomOrder(OrderOnly):
    """A fixed random rank per request (a hash of its id), the reserve to ``max_tokens``."""

    def _key(self, r):
        rank = int(hashlib.blake2b(r.request_id.encode(), digest_size=4).hexdigest(), 16) % r.max_tokens
        return (1, -max(rank, r.num_generated), 0 if r.num_generated else 1)


PARTS = {"order only": OrderOnly, "reserve only": ReserveOnly, "random order": RandomOrder}
NAMED = ("static-group", "seer-divided", "seer-no-spec", "oracle-divided")


def workload(args, seed: int):
    step = StepModel.from_json(args.step_model) if args.step_model else None
    if args.workload.startswith(lognormal.PREFIX):
        w = lognormal.workload(args.workload, args.group_size, seed, step or CPU_SMOLLM2)
    else:  # a preset: its own step model unless one is given
        w = preset_workload(args.workload, args.group_size, seed, step)
    return with_cluster(w, args.instances, args.kv_tokens, args.max_batch)


def one_seed(args, seed: int) -> dict[str, dict]:
    """Per policy: throughput, tail and re-prefill share, each against static-group's."""
    w = workload(args, seed)
    chunk = args.chunk_tokens or max(64, w.max_tokens // 32)
    lengths = {f"g{g}-r{i}": o for g, grp in enumerate(w.groups) for i, (_, o) in enumerate(grp)}
    n = w.cluster.instances
    rows = {}
    for name in NAMED:
        res = simulate(build(variant(name, chunk, KV_BLOCK_TOKENS, args.kv_reserve), lengths), w)
        rows[name] = rollout_metrics(res.requests, 0.0, res.end_s, n)
    options = variant("oracle-divided", chunk, KV_BLOCK_TOKENS, args.kv_reserve).options
    for name, cls in PARTS.items():
        res = simulate(cls(lengths=lengths, **options), w)
        rows[name] = rollout_metrics(res.requests, 0.0, res.end_s, n)
    base = rows["static-group"]
    return {name: {"throughput_vs_static": m["rollout/throughput_tok_s"] / base["rollout/throughput_tok_s"],
                   "tail_vs_static": m["rollout/tail_time_s"] / base["rollout/tail_time_s"],
                   "reprefill_frac": m["rollout/reprefill_tokens"] / m["rollout/output_tokens"]}
            for name, m in rows.items()}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--workload", required=True, help="lognormal:KEY=VALUE,... or a preset")
    p.add_argument("--group-size", type=int, default=8)
    p.add_argument("--step-model", default=None,
                   help="a step model JSON (default: CPU_SMOLLM2 for lognormal, the preset's own for a preset)")
    p.add_argument("--instances", type=int, default=None, help="override the workload's instance count")
    p.add_argument("--kv-tokens", type=int, default=None, help="override KV tokens per instance")
    p.add_argument("--max-batch", type=int, default=None, help="override the most requests per instance")
    p.add_argument("--chunk-tokens", type=int, default=None, help="default: max_tokens / 32, as umbra sim")
    p.add_argument("--kv-reserve", default="estimate", help="the seer rows' reserve (default estimate: none given up)")
    p.add_argument("--seeds", type=int, default=6)
    p.add_argument("--json", dest="json_path", default=None)
    args = p.parse_args()
    given = {"--seeds": args.seeds, "--instances": args.instances, "--kv-tokens": args.kv_tokens,
             "--max-batch": args.max_batch, "--chunk-tokens": args.chunk_tokens}
    bad = [flag for flag, v in given.items() if v is not None and v < 1]
    if bad:
        raise SystemExit(f"oracle_parts: {', '.join(bad)} must be >= 1")
    if args.kv_reserve not in ("estimate", "auto"):  # the parts' labels assume a reserve that counts growth
        raise SystemExit("oracle_parts: --kv-reserve must be estimate or auto")
    if args.json_path and not os.path.isdir(os.path.dirname(os.path.abspath(args.json_path))):
        raise SystemExit(f"oracle_parts: --json {args.json_path}: its folder does not exist")
    try:
        per_seed = [one_seed(args, s) for s in range(args.seeds)]
    except (ValueError, OSError) as exc:
        raise SystemExit(f"oracle_parts: {exc}") from None
    print(f"{args.workload}, seeds 0-{args.seeds - 1}, reserve {args.kv_reserve}; means over seeds (min-max)")
    print(f"{'policy':>14} | throughput vs static-group | tail vs static-group | re-prefilled")
    summary = {}
    for name in per_seed[0]:
        cols = {k: [s[name][k] for s in per_seed] for k in per_seed[0][name]}
        summary[name] = {k: {"mean": statistics.fmean(v), "min": min(v), "max": max(v)} for k, v in cols.items()}
        t, tl, rp = (summary[name][k] for k in ("throughput_vs_static", "tail_vs_static", "reprefill_frac"))
        print(f"{name:>14} | {t['mean']:.3f} ({t['min']:.3f}-{t['max']:.3f}){'':>9} | "
              f"{tl['mean']:.2f} ({tl['min']:.2f}-{tl['max']:.2f}){'':>5} | {100 * rp['mean']:.1f}%")
    if args.json_path:
        with open(args.json_path, "w") as fh:
            json.dump({"workload": args.workload, "seeds": args.seeds, "kv_reserve": args.kv_reserve,
                       "summary": summary, "per_seed": per_seed}, fh, indent=1)


if __name__ == "__main__":
    main()
