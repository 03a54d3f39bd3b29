"""Discrete-event rollout simulator driving the real policy objects.

Between two events an instance's batch is fixed, so every running request advances by
the same number of tokens: each instance keeps a virtual token clock ``v`` (tokens gained
per running request since it started) that moves at ``tokens_per_step / T(batch, context)``
per second; a chunk that joins at ``v0`` with ``k`` tokens to go ends at ``v0 + k``. Events:
a chunk ends (the policy is told, then asked for new dispatches), or ``refresh_tokens`` of
progress pass (the step time is re-read as contexts grow). A joining chunk first stalls
its instance for its prefill: one token on its last instance (chunk ends are KV-block
aligned), its whole context after a migration unless ``shared_kv`` (a global KV pool),
its prompt on first placement unless a request of its group already ran there.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass

from umbra.sim.request import SimRequest
from umbra.sim.spec_model import SpecModel
from umbra.sim.workload import Workload


@dataclass
class SimResult:
    """Finished requests in group order, simulated end time (s; start is 0), the instance
    concurrency cap used, and the peak KV use as a fraction of an instance's capacity."""

    requests: list[SimRequest]
    end_s: float
    capacity: int
    kv_peak_frac: float
    events: int


class _Instance:
    __slots__ = ("t", "stall_until", "v", "n", "ctx", "heap", "version", "rate", "prompts", "peak")

    def __init__(self):
        self.t = self.stall_until = self.v = 0.0
        self.n, self.ctx, self.version, self.rate, self.peak = 0, 0.0, 0, 0.0, 0.0
        self.heap: list = []          # (v_end, serial, request, tokens, start_s, prefill, context at join)
        self.prompts: set[int] = set()  # groups whose prompt is in this instance's prefix cache

    def advance(self, t: float) -> None:
        """Move the clocks to ``t`` (no progress while stalled on a prefill)."""
        run_from = max(self.t, self.stall_until)
        if t > run_from and self.n:
            dv = self.rate * (t - run_from)
            self.v += dv
            self.ctx += self.n * dv
        self.t = max(self.t, t)


def simulate(policy, workload: Workload, spec: SpecModel | None = None, shared_kv: bool = False,
             refresh_tokens: int | None = None) -> SimResult:
    """Run one rollout iteration of ``workload`` under ``policy`` (any ``rollout.policies``
    object: it sees the same calls as on real instances). ``spec``: grouped speculative
    decoding's acceptance model (None = off). Deterministic: no randomness inside.

    Raises RuntimeError when the policy stalls with requests left.
    """
    cluster, step = workload.cluster, workload.cluster.step
    cap = cluster.concurrency_cap(workload.max_len)
    groups = workload.requests()
    refresh = refresh_tokens or max(16, workload.max_tokens // 64)
    insts = [_Instance() for _ in range(cluster.instances)]
    events: list = []
    serial = count = 0

    def reschedule(i: int) -> None:
        nonlocal serial
        inst = insts[i]
        inst.version += 1
        if not inst.n:
            inst.rate = 0.0
            return
        g = spec.draft_length(inst.n, inst.ctx, step) if spec else 0
        per_step = spec.tokens_per_step(g) if spec else 1.0
        seconds = step.seconds(inst.n, inst.ctx, spec.draft_frac * g if spec else 0.0)
        inst.rate = per_step / (seconds * (1.0 + spec.overhead) if spec else seconds)
        dv = min(inst.heap[0][0] - inst.v, refresh)
        serial += 1
        heapq.heappush(events, (max(inst.t, inst.stall_until) + max(dv, 0.0) / inst.rate, serial, i, inst.version))

    def join(d, t: float) -> None:
        nonlocal serial
        r, i = d.request, d.instance
        inst = insts[i]
        inst.advance(t)
        context = r.prompt_len + r.num_generated
        if r.last_instance is None:
            prefill = 1 if r.group_id in inst.prompts else r.prompt_len
        elif r.last_instance == i or shared_kv:
            prefill = 1
        else:
            prefill = context
        inst.prompts.add(r.group_id)
        inst.stall_until = max(inst.t, inst.stall_until) + prefill * step.c_prefill
        tokens = r.tokens_this_chunk(d.max_tokens)
        serial += 1
        heapq.heappush(inst.heap, (inst.v + tokens, serial, r, tokens, t, prefill, context))
        inst.n += 1
        inst.ctx += context
        inst.peak = max(inst.peak, inst.ctx)

    policy.reset(groups, [cap] * cluster.instances)
    touched: set[int] = set()
    for d in policy.next_dispatches():
        join(d, 0.0)
        touched.add(d.instance)
    for i in touched:
        reschedule(i)
    end = 0.0
    while events:
        t, _, i, version = heapq.heappop(events)
        inst = insts[i]
        if version != inst.version:
            continue  # superseded by a later change on this instance
        count += 1
        inst.advance(t)
        inst.peak = max(inst.peak, inst.ctx)  # KV held: the contexts grew since the last event
        touched = {i}
        while inst.heap and inst.heap[0][0] <= inst.v + 1e-9 * max(1.0, inst.v):  # float slack
            _, _, r, tokens, start, prefill, context = heapq.heappop(inst.heap)
            inst.n -= 1
            inst.ctx = max(0.0, inst.ctx - (context + tokens))
            r.add_chunk(i, tokens, start, t, prefill)
            end = max(end, t)
            policy.on_chunk_done(r, i)
            for d in policy.next_dispatches():
                join(d, t)
                touched.add(d.instance)
        for j in touched:
            if j != i:
                insts[j].advance(t)
            reschedule(j)
    if not policy.finished:
        raise RuntimeError(f"policy {policy.name} stalled with {policy.outstanding} requests left")
    kv_peak = max(inst.peak for inst in insts) / cluster.kv_tokens
    return SimResult([r for g in groups for r in g], end, cap, kv_peak, count)
