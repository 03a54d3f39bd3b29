"""``umbra bench tail``: where a recorded rollout's tail time goes (ours).

Input: ``umbra bench rollout --trace`` (every request's chunks: instance, start, finish,
tokens). The tail window runs from the moment 90% of the requests had finished to the last
finish (:func:`umbra.rollout.metrics.tail_time`, Seer §2). Per policy it prints who is in
the tail (how many clipped at ``max_tokens``, when their first chunk started, how long they
sat parked between chunks over the whole rollout), how the window's request-seconds split
between decoding inside a chunk and waiting parked between two, and when each instance ran
its last chunk: a tail of late starters, of requests parked mid-way, or of one instance
left running alone each calls for a different remedy.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from collections import defaultdict

from umbra.rollout.metrics import tail_window

FRAC = 0.1  # the tail's share of requests, as the rollout metrics count it
SLACK_S = 1.0  # a request's finish and its last chunk's end: the same moment, up to clocks


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--trace", required=True, help="umbra bench rollout --trace JSONL")
    p.add_argument("--policies", default=None, help="comma-separated (default: every policy the trace recorded)")
    p.add_argument("--json", dest="json_path", default=None, help="write results here")


def _overlap(a: float, b: float, lo: float, hi: float) -> float:
    return max(0.0, min(b, hi) - max(a, lo))


def _parked(chunks: list) -> list[tuple[float, float]]:
    """The spans between a request's consecutive chunks (it waited in the buffer); a next
    chunk timed a little before the last one's end (another node's clock) waited 0 s."""
    return [(a[2], max(a[2], b[1])) for a, b in zip(chunks, chunks[1:])]


def anatomy(records: list[dict], frac: float = FRAC) -> dict:
    """The tail of one policy's requests (``load_trace`` records; seconds from the rollout's
    start). Raises ValueError with fewer than two requests, or for a request without chunks
    or whose finish is not its last chunk's end."""
    if len(records) < 2:
        raise ValueError("a tail needs at least two requests")
    for r in records:
        if not r["chunks"]:
            raise ValueError(f"a request finishing at {r['finish_s']:.1f} s has no chunk")
        if abs(r["finish_s"] - r["chunks"][-1][2]) > SLACK_S:
            raise ValueError(f"a request finishes at {r['finish_s']:.1f} s but its last chunk ends at "
                             f"{r['chunks'][-1][2]:.1f} s")
    t0, t1 = tail_window(0.0, [r["finish_s"] for r in records], frac)
    ordered = sorted(records, key=lambda r: r["finish_s"])
    tail = ordered[int(len(ordered) * (1 - frac)):]
    decoding = parked = 0.0
    for r in records:
        decoding += sum(_overlap(c[1], c[2], t0, t1) for c in r["chunks"])
        parked += sum(_overlap(a, b, t0, t1) for a, b in _parked(r["chunks"]))
    last: dict[int, float] = defaultdict(float)
    for r in records:
        for c in r["chunks"]:
            last[c[0]] = max(last[c[0]], c[2])
    starts = [r["chunks"][0][1] for r in tail]
    waits = [sum(b - a for a, b in _parked(r["chunks"])) for r in tail]
    ends = sorted(last.values())
    return {
        "requests": len(records), "tail_s": t1 - t0, "tail_from_s": t0, "tail_requests": len(tail),
        "tail_clipped": sum(r.get("finish_reason") == "length" for r in tail),
        "tail_groups": len({r.get("group") for r in tail}) if all(r.get("group") is not None for r in tail) else None,
        "tail_first_start_s": [min(starts), max(starts)],
        "tail_parked_s_mean": statistics.fmean(waits), "tail_parked_s_max": max(waits),
        "window_decoding_request_s": decoding, "window_parked_request_s": parked,
        "instance_last_finish_s": {str(i): t for i, t in sorted(last.items())},
        "instance_end_spread_s": ends[-1] - ends[0],
    }


def _policies(path: str) -> list[str]:
    """The policies a trace recorded, in order (unreadable lines are left to ``load_trace``)."""
    seen: dict[str, None] = {}
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            try:
                raw = json.loads(line)
            except (ValueError, RecursionError):
                continue
            if isinstance(raw, dict) and isinstance(raw.get("policy"), str):
                seen.setdefault(raw["policy"])
    return list(seen)


def _line(text: str) -> str:
    """``text`` on one printable line (no control characters, no lone surrogates)."""
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return " ".join("".join(c if c.isprintable() else " " for c in text).split())


def _cell(text: str) -> str:
    """``text`` fit for one cell of the printed table."""
    return _line(text).replace("|", "\\|") or '""'


def _policy_names(args) -> list[str]:
    if args.policies is None:
        names = _policies(args.trace)
        if not names:
            raise ValueError(f"{args.trace} holds no trace records")
        return names
    names = list(dict.fromkeys(n.strip() for n in args.policies.split(",") if n.strip()))
    if not names:
        raise ValueError("--policies names no policy")
    return names


def _check_json_path(args) -> None:
    if args.json_path is None:
        return
    target = os.path.abspath(args.json_path)
    if os.path.isdir(target) or not os.path.isdir(os.path.dirname(target)):
        raise ValueError(f"--json: {args.json_path} is a folder or its folder does not exist")
    if os.path.exists(target) and not os.path.isfile(target):
        raise ValueError(f"--json: {args.json_path} is not a regular file")
    if os.path.exists(target) and os.path.exists(args.trace) and os.path.samefile(target, args.trace):
        raise ValueError("--json names the trace itself; it would be overwritten")


def run(args: argparse.Namespace) -> int:
    """Print the table; returns the exit code (2 on bad input, 1 when --json cannot be written)."""
    from umbra.bench.spec_inputs import MAX_BYTES, load_trace

    try:
        if not os.path.isfile(args.trace) or os.path.getsize(args.trace) > MAX_BYTES["trace"]:
            raise ValueError(f"{args.trace} is not a regular file of at most 500 MB")
        _check_json_path(args)
        out = {}
        for name in _policy_names(args):
            try:
                out[name] = anatomy(load_trace(args.trace, name))
            except ValueError as exc:  # load_trace's messages name the policy already
                raise (exc if f"policy {name}" in str(exc) else ValueError(f"policy {name}: {exc}")) from None
    except (ValueError, OSError) as exc:
        print(f"umbra bench tail: {_line(str(exc))}", file=sys.stderr)
        return 2
    print("| policy | tail s | from s | clipped in the tail | tail's first chunks started | tail's time parked, "
          "mean / max | window: request-s decoding / parked | instances' last chunk ends |")
    print("|---|---|---|---|---|---|---|---|")
    for name, a in out.items():
        first = a["tail_first_start_s"]
        started = f"{first[0]:.1f}-{first[1]:.1f} s"
        print(f"| {_cell(name)} | {a['tail_s']:.1f} | {a['tail_from_s']:.1f} | {a['tail_clipped']} of "
              f"{a['tail_requests']} | {started} | {a['tail_parked_s_mean']:.1f} / {a['tail_parked_s_max']:.1f} s | "
              f"{a['window_decoding_request_s']:.0f} / {a['window_parked_request_s']:.0f} | "
              f"{', '.join(f'{t:.1f}' for t in a['instance_last_finish_s'].values())} s |")
    if args.json_path:
        try:
            with open(args.json_path, "w") as fh:
                json.dump({"trace": args.trace, "policies": out}, fh, indent=1)
        except OSError as exc:
            print(_line(f"umbra bench tail: cannot write --json {args.json_path}: {exc.strerror or exc}"),
                  file=sys.stderr)
            return 1
    return 0
