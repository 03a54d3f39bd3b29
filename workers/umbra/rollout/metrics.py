"""Rollout metrics (the names of the metric catalogue), computed from finished requests."""
from __future__ import annotations

import statistics

from umbra.rollout.request import Request


def _percentile(sorted_vals: list[float], q: float) -> float:
    """Nearest-rank percentile, ``q`` in [0, 100]."""
    k = max(0, min(len(sorted_vals) - 1, int(round(q / 100 * len(sorted_vals) + 0.5)) - 1))
    return sorted_vals[k]


def tail_time(start_s: float, finishes: list[float], frac: float = 0.1) -> float:
    """Seconds spent solely on the last ``frac`` of requests to complete (Seer §2):
    from the moment ``1 - frac`` of requests have finished to the last finish.

    Args: rollout start and per-request finish times (wall-clock seconds).
    Raises ValueError on an empty list.
    """
    head_done, last = tail_window(start_s, finishes, frac)
    return last - head_done


def tail_window(start_s: float, finishes: list[float], frac: float = 0.1) -> tuple[float, float]:
    """``(when 1 - frac of requests had finished, the last finish)``: the window
    :func:`tail_time` measures. Raises ValueError on an empty list."""
    if not finishes:
        raise ValueError("no finished requests")
    ordered = sorted(finishes)
    head = int(len(ordered) * (1 - frac))
    return (ordered[head - 1] if head > 0 else start_s), ordered[-1]


def busy_seconds(intervals: list[tuple[float, float]]) -> float:
    """Length of the union of ``(start, end)`` intervals, seconds."""
    total, cur_s, cur_e = 0.0, None, None
    for s, e in sorted(intervals):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s
    return total


def instance_idle_frac(requests: list[Request], start_s: float, end_s: float, num_instances: int) -> list[float]:
    """Per instance, the fraction of the rollout during which it ran no chunk."""
    elapsed = max(end_s - start_s, 1e-9)
    per: list[list[tuple[float, float]]] = [[] for _ in range(num_instances)]
    for r in requests:
        for c in r.chunks:
            per[c.instance].append((c.start_s, c.finish_s))
    return [max(0.0, 1.0 - busy_seconds(iv) / elapsed) for iv in per]


def rollout_metrics(requests: list[Request], start_s: float, end_s: float, num_instances: int = 1
                    ) -> dict[str, float]:
    """Per-iteration ``rollout/*`` metrics over finished ``requests``.

    Units: seconds, tokens, tokens/s. Raises ValueError if a request has not finished.
    """
    if any(r.finish_s is None or r.start_s is None for r in requests):
        raise ValueError("every request must be finished")
    elapsed = max(end_s - start_s, 1e-9)
    lengths = [r.num_generated for r in requests]
    latencies = sorted(r.finish_s - r.start_s for r in requests)
    decode = [r.num_generated / max(r.finish_s - r.start_s, 1e-9) for r in requests]
    tail = tail_time(start_s, [r.finish_s for r in requests])
    idle = instance_idle_frac(requests, start_s, end_s, num_instances)
    out = {
        "rollout/time_s": elapsed,
        "rollout/output_tokens": float(sum(lengths)),
        "rollout/throughput_tok_s": sum(lengths) / elapsed,
        "rollout/tail_time_s": tail,
        "rollout/tail_frac": tail / elapsed,
        "rollout/response_len/mean": statistics.fmean(lengths),
        "rollout/response_len/max": float(max(lengths)),
        "rollout/clip_ratio": sum(r.clipped for r in requests) / len(requests),
        "rollout/decode_tok_s": statistics.median(decode),
        "rollout/chunks": float(sum(len(r.chunks) for r in requests)),
        # measured: context tokens later chunks recomputed (partial KV blocks, migrations, KV
        # given up), beyond the last one, which a continuous decode step computes as well
        "rollout/reprefill_tokens": float(sum(max(0, c.prefill - 1) for r in requests for c in r.chunks[1:])),
        "rollout/instance_idle_frac": statistics.fmean(idle),
    }
    for i, frac in enumerate(idle):
        out[f"rollout/instance_idle_frac/{i}"] = frac
    for q in (50, 90, 99):
        out[f"rollout/request_latency_s/p{q}"] = _percentile(latencies, q)
    out["rollout/request_latency_s/max"] = latencies[-1]
    return out


def policy_counters(policy) -> dict[str, float]:
    """Migrations counted by a chunking policy (0 for others), parked requests whose KV its
    ledger gave up, the instances lost during the rollout and the chunks that were running
    on them and ran again elsewhere."""
    ledger = getattr(policy, "ledger", None)
    return {"rollout/migrations": float(getattr(policy, "migrations", 0)),
            "rollout/kv_given_up": float(ledger.given_up if ledger is not None else 0),
            "rollout/instances_lost": float(len(getattr(policy, "lost_instances", ()))),
            "rollout/redispatched_chunks": float(getattr(policy, "redispatched", 0))}


def engine_metrics(before: list[dict], after: list[dict]) -> dict[str, float]:
    """``rollout/preemptions``, ``rollout/spec/accept_len`` (mean tokens per verification
    step with a draft, incl. the bonus token; 1.0 without drafts), ``rollout/spec/draft_tokens``
    and ``rollout/spec/accepted_tokens`` (totals) from the instances' engine counters read
    before and after the rollout."""
    delta = {k: sum(a[k] - b[k] for a, b in zip(after, before)) for k in after[0]} if after else {}
    drafts = delta.get("spec_drafts", 0.0)
    return {"rollout/preemptions": delta.get("preemptions", 0.0),
            "rollout/spec/accept_len": 1.0 + delta.get("spec_accepted", 0.0) / drafts if drafts else 1.0,
            "rollout/spec/draft_tokens": delta.get("spec_draft_tokens", 0.0),
            "rollout/spec/accepted_tokens": delta.get("spec_accepted", 0.0)}


def request_records(requests: list[Request], start_s: float) -> list[dict]:
    """Per-request rows for the latency CDF and timelines; times relative to ``start_s``."""
    return [
        {"group": r.group_id, "index": r.index, "instance": r.instance,
         "start_s": round(r.start_s - start_s, 4), "finish_s": round(r.finish_s - start_s, 4),
         "prompt_tokens": r.prompt_len, "output_tokens": r.num_generated, "finish_reason": r.finish_reason,
         "policy_version": r.policy_version,
         "chunks": [[c.instance, round(c.start_s - start_s, 4), round(c.finish_s - start_s, 4), c.tokens]
                    for c in r.chunks]}
        for r in requests
    ]
