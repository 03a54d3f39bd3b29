"""``umbra bench spec-bound``: the most any drafter could speed up a measured rollout on this
machine (ours; the oracle beside ``umbra bench rollout``'s speculation rows).

Input: a rollout without speculation, as ``umbra bench rollout --trace`` recorded it (every
chunk's instance, start and finish), and the engine's step cost ``T(B, g) = c0 + c_row * B +
c_draft * B * g`` as ``umbra bench spec-cost`` fitted it (``none`` beside ``draft<g>``).
While an instance decodes ``B`` rows, one step of ``T(B, 0)`` seconds moves each row one token.
An oracle drafter, every draft token accepted, moves each row ``g + 1`` tokens in ``T(B, g)``;
it picks the best ``g <= gamma_max`` for each ``B``. So each stretch of time with ``B`` rows
running would shrink by ``f(B) = min_g T(B, g) / ((g + 1) T(B, 0))``, and the rollout by
``sum dt / sum f(B) dt`` over its stretches (instances summed; the slowest instance's time
would be the wall time, so the whole-rollout bound uses each instance's own stretches and
takes the largest). Prefill time is shrunk too, so the bound is generous. ``--accept-rate a``
gives the same for a drafter whose every draft position holds with probability ``a``;
``--accept-profile`` for the best token drafter on the policy's own responses (``E(g)`` from
``umbra bench accept-ceiling``). ``--selective`` bounds a drafter that may also choose, each
step, which rows draft how far (ours: every draft token whose chained ``p_max`` beats the best
reachable tokens per second times its cost, ``shrink_selective``): one uniform ``g`` per step
averages confident and doubtful positions, so without it the bound would not hold for such a
drafter.
"""
from __future__ import annotations

import argparse
import json
import sys


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--trace", required=True, help="umbra bench rollout --trace JSONL")
    p.add_argument("--policy", default="seer-no-spec", help="the trace's rollout without speculation")
    p.add_argument("--cost", required=True, help="umbra bench spec-cost --json output (with none and draft<g>), "
                   "or scripts/device/spec_cost_gpu.py's (with --cost-shape)")
    p.add_argument("--cost-shape", default=None,
                   help="which model shape of a spec_cost_gpu.py file: smollm2-135m or qwen2.5-7b (its measured "
                        "table is interpolated)")
    p.add_argument("--gamma-max", type=int, default=8, help="longest draft considered per step (1..64)")
    p.add_argument("--accept-rate", type=float, default=1.0,
                   help="acceptance per draft position (1.0: the oracle, every draft accepted; the "
                        "rollout bench's rows show what grouped drafts reach)")
    p.add_argument("--accept-profile", default=None,
                   help="umbra bench accept-ceiling --json output: its E(g) instead of --accept-rate")
    p.add_argument("--selective", action="store_true",
                   help="with --accept-profile: the best drafter that also picks per step which rows draft how "
                        "far, from the profile's p_max by position")
    p.add_argument("--json", dest="json_path", default=None, help="write results here")


def step_time(cost: dict, rows: int, g: int) -> float | None:
    """Seconds of one step of ``rows`` rows verifying ``g`` draft tokens each: the measured
    ``table`` (``{B: {g: s}}``) interpolated linearly in ``B`` when the cost has one (None for
    a ``g`` it lacks), else the fitted ``c0 + c_row B + c_draft B g``."""
    table = cost.get("table")
    if not table:
        return cost["c0_s"] + cost["row_s"] * rows + cost["draft_s"] * rows * g
    points = sorted((int(b), by_g[str(g)]) for b, by_g in table.items() if str(g) in by_g)
    if not points:
        return None
    if rows <= points[0][0] or len(points) == 1:
        return points[0][1]
    for (b0, t0), (b1, t1) in zip(points, points[1:]):
        if rows <= b1:
            return t0 + (t1 - t0) * (rows - b0) / (b1 - b0)
    (b0, t0), (b1, t1) = points[-2], points[-1]
    # beyond the largest batch measured: its last slope, never falling (a noisy pair may)
    return t1 + max(0.0, t1 - t0) * (rows - b1) / (b1 - b0)


def shrink(rows: int, cost: dict, gamma_max: int, accept: float | list[float] = 1.0) -> tuple[float, int]:
    """``(f, g)``: the factor a drafter whose every draft position is accepted with probability
    ``accept`` (1: the oracle) shrinks a step of ``rows`` rows by, and its best draft length;
    ``accept`` may instead be ``[E(0), E(1), ...]``, tokens per row and step by draft length."""
    base = step_time(cost, rows, 0)
    best, best_g = 1.0, 0
    profile = accept if isinstance(accept, list) else None
    for g in range(1, min(gamma_max, len(profile) - 1 if profile else gamma_max) + 1):
        # per row and step: E(g), Seer Alg. 1
        tokens = profile[g] if profile else sum(accept ** k for k in range(g + 1))
        t = step_time(cost, rows, g)
        if t is None:
            continue
        f = t / (tokens * base)
        if f < best:
            best, best_g = f, g
    return best, best_g


def draft_token_cost(cost: dict, rows: int, gamma_max: int) -> float | None:
    """Seconds one more verified draft token adds to a step of ``rows`` rows: the fit's
    ``draft_s``, or the measured table's mean slope per draft token from g = 0 to its longest
    draft within ``gamma_max`` (a linear charge; the table measures every row drafting alike)."""
    if not cost.get("table"):
        return cost["draft_s"]
    base = step_time(cost, rows, 0)
    longest = max((g for g in range(1, gamma_max + 1) if step_time(cost, rows, g) is not None), default=None)
    if longest is None:
        return None
    return max(0.0, (step_time(cost, rows, longest) - base) / (rows * longest))


def shrink_selective(rows: int, cost: dict, gamma_max: int, pmax: list[list[float]], samples: int = 200,
                     seed: int = 0) -> tuple[float, float]:
    """``(f, d)``: what the best selective token drafter shrinks a step of ``rows`` rows by, and
    its draft tokens per row and step. Each of ``samples`` steps draws ``rows`` positions of the
    profile's responses; a row's draft token k is accepted with ``p_max`` chained over the next
    k positions (none past the response's end). The drafter maximises tokens per second over
    all the steps together: it drafts every token whose chained probability ``Q`` beats
    ``rate * c_draft``, ``rate`` being that best tokens per second (Dinkelbach's iteration; a
    step-by-step optimum, ``draft_budget.allocate``, gets a little less). ``f`` is seconds per
    token over that of steps without drafts."""
    import random

    from umbra.speculative.draft_budget import chain

    c_draft = draft_token_cost(cost, rows, gamma_max)
    base = step_time(cost, rows, 0)
    if c_draft is None or base is None:
        return 1.0, 0.0
    rng = random.Random(seed + rows)
    sites = [(r, t) for r, row in enumerate(pmax) for t in range(len(row))]
    chains = []
    for _ in range(samples * rows):
        r, t = rng.choice(sites)
        row = pmax[r]
        chains.append(chain([row[t + k] if t + k < len(row) else 0.0 for k in range(1, gamma_max + 1)]))
    rate, drafted = rows / base, 0
    for _ in range(50):
        cut = rate * c_draft
        taken = [q for c in chains for q in c if q > cut]  # a prefix of each row: Q never rises along it
        drafted = len(taken)
        new = (samples * rows + sum(taken)) / (samples * base + c_draft * drafted)
        if new <= rate * (1 + 1e-12):
            break
        rate = new
    return (1 / rate) / (base / rows), drafted / (samples * rows)


def stretches(chunks: list[tuple[float, float]]) -> list[tuple[float, float, int]]:
    """``[(start, end, running rows)]`` from one instance's chunk intervals ``(start, finish)``."""
    edges = sorted([(s, 1) for s, _ in chunks] + [(f, -1) for _, f in chunks])
    out, rows, last = [], 0, None
    for t, d in edges:
        if last is not None and t > last and rows > 0:
            out.append((last, t, rows))
        rows += d
        last = t
    return out


def bound(records: list[dict], cost: dict, gamma_max: int, tail_from: float | None = None,
          accept: float | list[float] = 1.0, pmax: list[list[float]] | None = None) -> dict:
    """The oracle drafter's speed-up over ``records`` (one rollout's trace rows), over the
    whole rollout and, with ``tail_from`` (seconds from its start), over its tail; with
    ``pmax``, the best selective token drafter's (``shrink_selective``)."""
    factors: dict[int, tuple[float, float]] = {}

    def factor(rows: int) -> tuple[float, float]:
        if rows not in factors:
            factors[rows] = shrink_selective(rows, cost, gamma_max, pmax) if pmax else shrink(
                rows, cost, gamma_max, accept)
        return factors[rows]

    by_instance: dict[int, list] = {}
    for r in records:
        for inst, start, finish, _tokens in r["chunks"]:
            by_instance.setdefault(inst, []).append((start, finish))
    whole, oracle, tail, tail_oracle, rows_time = 0.0, 0.0, 0.0, 0.0, {}
    for chunks in by_instance.values():
        t_inst = o_inst = 0.0
        for start, end, rows in stretches(chunks):
            dt = end - start
            f, _g = factor(rows)
            t_inst, o_inst = t_inst + dt, o_inst + f * dt
            rows_time[rows] = rows_time.get(rows, 0.0) + dt
            if tail_from is not None and start >= tail_from:
                tail, tail_oracle = tail + dt, tail_oracle + f * dt
        if t_inst > whole:
            whole, oracle = t_inst, o_inst
    return {"busy_s": whole, "oracle_busy_s": oracle, "speedup": whole / oracle if oracle else 1.0,
            "tail_busy_s": tail, "tail_oracle_s": tail_oracle,
            "tail_speedup": tail / tail_oracle if tail_oracle else 1.0,
            # by running rows: the best draft length, or (selective) draft tokens a row and step
            ("draft_tokens_by_rows" if pmax else "best_draft_by_rows"): {b: factor(b)[1] for b in sorted(rows_time)}}


def run(args: argparse.Namespace) -> int:
    """Print the bound; returns the exit code (2 on bad input)."""
    import os

    from umbra.bench.spec_inputs import load_cost, load_pmax, load_profile, load_trace
    from umbra.rollout.metrics import tail_time

    try:
        if not 0.0 <= args.accept_rate <= 1.0:
            raise ValueError("--accept-rate must be within 0..1")
        if not 1 <= args.gamma_max <= 64:
            raise ValueError("--gamma-max must be within 1..64")
        if args.json_path and (os.path.isdir(args.json_path)
                               or not os.path.isdir(os.path.dirname(os.path.abspath(args.json_path)))):
            raise ValueError(f"--json: {args.json_path} is a folder or its folder does not exist")
        cost = load_cost(args.cost, getattr(args, "cost_shape", None))
        records = load_trace(args.trace, args.policy)
        profile = load_profile(args.accept_profile) if getattr(args, "accept_profile", None) else None
        pmax = None
        if getattr(args, "selective", False):
            if profile is None:
                raise ValueError("--selective needs --accept-profile (its p_max by position)")
            pmax = load_pmax(args.accept_profile)
    except ValueError as exc:
        print(f"umbra bench spec-bound: {exc}", file=sys.stderr)
        return 2
    finishes = [r["finish_s"] for r in records]
    tail = tail_time(0.0, finishes)
    out = bound(records, cost, args.gamma_max, max(finishes) - tail, profile or args.accept_rate, pmax)
    out.update(tail_time_s=tail, cost=cost, policy=args.policy, accept_rate=args.accept_rate,
               accept_profile=profile, selective=pmax is not None)
    if cost.get("table"):
        batches = sorted(map(int, cost["table"]))
        print(f"step cost: {args.cost_shape}'s measured table (B = {batches[0]}..{batches[-1]}), interpolated in B")
    else:
        print(f"step cost: {1000 * cost['c0_s']:.1f} ms + {1000 * cost['row_s']:.2f} ms/row"
              f" + {1000 * cost['draft_s']:.2f} ms/draft token")
    who = "an oracle drafter (every draft accepted)" if args.accept_rate == 1 else \
        f"a drafter accepted {args.accept_rate:.2f} per position"
    if profile:
        g = min(8, len(profile) - 1)
        who = f"the best token drafter of {args.accept_profile} (E({g}) = {profile[g]:.2f})"
        if pmax is not None:
            who = f"the best selective token drafter of {args.accept_profile}"
    print(f"{args.policy}: busiest instance {out['busy_s']:.1f} s; {who} "
          f"{out['oracle_busy_s']:.1f} s: at most {out['speedup']:.2f}x")
    if tail >= 1.0:
        print(f"tail ({tail:.1f} s): at most {out['tail_speedup']:.2f}x faster "
              f"({out['tail_busy_s']:.1f} -> {out['tail_oracle_s']:.1f} s busy on the tail's instances)")
    else:  # e.g. clipped responses that all end together
        print(f"tail ({tail:.3f} s): too short to bound")
    widest = max((int(b) for b in cost.get("table") or {}), default=None)
    by_rows = out["draft_tokens_by_rows"] if pmax is not None else out["best_draft_by_rows"]
    if widest is not None and max(by_rows, default=0) > widest:
        print(f"note: the trace runs up to {max(by_rows)} rows; the table stops at B = {widest}, "
              "so larger batches are extrapolated from its last two batch sizes")
    if pmax is not None:
        shown = sorted({b for b in by_rows if b in (1, 2, 4, 8, 16, 32, 64, 128, 256)} | {max(by_rows)})
        print("draft tokens per row and step, by running rows: " + ", ".join(f"{b}: {by_rows[b]:.2f}" for b in shown))
    else:
        spans: list[list[int]] = []  # [first rows, last rows, draft length]
        for b, g in out["best_draft_by_rows"].items():
            if spans and spans[-1][2] == g and spans[-1][1] == b - 1:
                spans[-1][1] = b
            else:
                spans.append([b, b, g])
        print("best draft length by running rows: " + ", ".join(
            f"{lo}{'' if lo == hi else f'-{hi}'}: {g}" for lo, hi, g in spans))
    if args.json_path:
        with open(args.json_path, "w") as fh:
            json.dump(out, fh, indent=2)
    return 0
