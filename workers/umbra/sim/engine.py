"""Discrete-event rollout simulator driving the real policy objects.

Between two events an instance's batch is fixed, so every running request advances by
the same number of tokens: each instance keeps a virtual token clock ``v`` (tokens gained
per running request since it started) that moves at ``tokens_per_step / T(batch, context)``
per second; a chunk that joins at ``v0`` with ``k`` tokens to go ends at ``v0 + k``. Events:
a chunk ends (the policy is told, then asked for new dispatches), ``refresh_tokens`` of
progress pass (the step time is re-read as contexts grow), or (engine admission) the KV
cache fills. A joining chunk first stalls its instance for its prefill: one token when its
KV is resident there (chunk ends are KV-block aligned), after a move or a given-up KV its
context less what the instance's prefix cache still holds (its group's prompt, and what of
its freed blocks the free queue has not handed out since) unless ``shared_kv`` (a global KV
pool), its prompt on first placement unless a request of its group already ran there. With
a step model's ``c_host`` the instances share one host: a change of any batch re-reads every
instance's step time.

KV is held on demand: a running request holds its prompt plus what it generated. How much
runs at once follows the policy's admission rule (``Policy.admission``): a worst-case cap
("cap"); the policy's KV ledger ("kv"); or, for ``verl``, vLLM's own scheduler ("engine"):
the instance admits waiting requests first come while their context fits, and when a step
needs KV that is not free it preempts the newest running request, whose context is
recomputed when it resumes (vLLM's preemption by recompute) except what its prefix cache
still holds. What a returning request finds cached, a request resumed after a preemption or
the next chunk of one whose KV the ledger gave up, follows each instance's free block queue
(:mod:`umbra.sim.free_queue`, ours): freed blocks keep their content until the KV the
instance allocates reaches them, after the blocks that never held any and those freed
before them (under vLLM's scheduler the queue is every block no running request holds).
The running requests of a group on one instance hold their prompt's full KV blocks once, as
vLLM's prefix cache shares them (a group whose requests have prompts of different lengths,
as the presets draw them, shares nothing: the ledger's rule).
"""
from __future__ import annotations

import heapq
from collections import Counter, deque
from dataclasses import dataclass

from umbra.rollout.policies.kv_ledger import KVBudget, KVLedger
from umbra.sim.free_queue import DONE, GIVEN_UP, LRU, FreeQueue
from umbra.sim.request import SimRequest
from umbra.sim.spec_model import SpecModel
from umbra.sim.workload import Workload

KV_BLOCK_TOKENS = 16  # simulated engines: CUDA vLLM's default block


@dataclass
class SimResult:
    """Finished requests in group order, simulated end time (s; start is 0), the instance
    concurrency cap used (the worst-case cap; 0 for other admission rules), the peak KV
    held by running requests as a fraction of an instance's capacity, events, and the
    preemptions of engine admission."""

    requests: list[SimRequest]
    end_s: float
    capacity: int
    kv_peak_frac: float
    events: int
    preemptions: int = 0


class _Instance:
    __slots__ = ("t", "stall_until", "v", "n", "ctx", "heap", "version", "rate", "prompts", "peak", "waiting",
                 "admitted", "shared", "groups", "allocated", "preempted", "free", "parked")

    def __init__(self, kv_tokens: float):
        self.t = self.stall_until = self.v = 0.0
        self.n, self.ctx, self.version, self.rate, self.peak = 0, 0.0, 0, 0.0, 0.0
        self.heap: list = []          # (v_end, serial, request, tokens, start_s, prefill, context at join, v at join)
        self.prompts: set[int] = set()  # groups whose prompt is in this instance's prefix cache
        self.waiting: deque = deque()   # engine admission: requests not yet (or no longer) running
        self.admitted: list = []        # engine admission: running entries in admission order (newest last)
        self.groups: Counter = Counter()  # engine admission: running requests per shared prompt (KVLedger.prompt_key)
        self.shared = 0.0               # engine admission: prompt tokens in ``ctx`` that share blocks
        self.allocated = 0.0            # KV tokens allocated so far (decoded or prefilled here)
        self.preempted: dict = {}       # engine admission: request_id -> prompt tokens its group held then
        self.free = FreeQueue(kv_tokens)  # what freed blocks still hold (``queue`` keeps its front)
        self.parked: dict = {}          # KV ledger: request_id -> full-block tokens parked here

    def kv(self) -> float:
        """KV tokens the running requests hold (a group's full prompt blocks once)."""
        return self.ctx - self.shared

    def shareable(self, r) -> int:
        """Tokens of ``r``'s context held once here while a request with the same prompt
        runs (its group's, as the ledger counts them): its prompt's full blocks."""
        return r.prompt_len // KV_BLOCK_TOKENS * KV_BLOCK_TOKENS if self.groups[KVLedger.prompt_key(r)] else 0

    def hold(self, r, sign: int) -> None:
        """Engine admission: ``r`` starts (+1) or stops (-1) running; its prompt's full blocks
        are shared while another request of its group runs."""
        if sign < 0:
            self.groups[KVLedger.prompt_key(r)] -= 1
        self.shared += sign * self.shareable(r)
        if sign > 0:
            self.groups[KVLedger.prompt_key(r)] += 1

    def advance(self, t: float) -> None:
        """Move the clocks to ``t`` (no progress while stalled on a prefill)."""
        run_from = max(self.t, self.stall_until)
        if t > run_from and self.n:
            dv = self.rate * (t - run_from)
            self.v += dv
            self.ctx += self.n * dv
            self.allocated += self.n * dv
        self.t = max(self.t, t)


def _blocks(tokens: float) -> int:
    """Tokens in whole KV blocks (a partial block has no prefix-cache content)."""
    return int(tokens) // KV_BLOCK_TOKENS * KV_BLOCK_TOKENS


def _step_seconds(step, workload: Workload):
    """Seconds of a decode step of ``batch`` sequences, each holding the mean prompt plus half
    of ``max_tokens`` (what a policy could know before the rollout)."""
    prompts = [p for g in workload.groups for p, _ in g]
    context = sum(prompts) / max(1, len(prompts)) + workload.max_tokens / 2
    return lambda batch: step.seconds(batch, batch * context)


def simulate(policy, workload: Workload, spec: SpecModel | None = None, shared_kv: bool = False,
             refresh_tokens: int | None = None) -> SimResult:
    """Run one rollout iteration of ``workload`` under ``policy`` (any ``rollout.policies``
    object: it sees the same calls as on real instances). ``spec``: grouped speculative
    decoding's acceptance model (None = off). Deterministic: no randomness inside.

    Raises RuntimeError when the policy stalls with requests left.
    """
    cluster, step = workload.cluster, workload.cluster.step
    admission = getattr(policy, "admission", "cap")
    cap = cluster.concurrency_cap(workload.max_len)
    groups = workload.requests()
    refresh = refresh_tokens or max(16, workload.max_tokens // 64)
    kv_cap = float(cluster.kv_tokens)
    insts = [_Instance(kv_cap) for _ in range(cluster.instances)]
    events: list = []
    serial = count = preemptions = 0

    def reschedule(i: int) -> None:
        nonlocal serial
        inst = insts[i]
        inst.version += 1
        if not inst.n:
            inst.rate = 0.0
            return
        g = spec.draft_length(inst.n, inst.ctx, step) if spec else 0
        per_step = spec.tokens_per_step(g) if spec else 1.0
        others = sum(o.n for o in insts) - inst.n if step.c_host else 0  # the host's other instances
        seconds = step.seconds(inst.n, inst.ctx, spec.draft_frac * g if spec else 0.0, others)
        inst.rate = per_step / (seconds * (1.0 + spec.overhead) if spec else seconds)
        dv = min(inst.heap[0][0] - inst.v, refresh)
        if admission == "engine":  # the KV cache fills when every running context has grown this far
            dv = min(dv, max(0.0, (kv_cap - inst.kv()) / inst.n))
        serial += 1
        heapq.heappush(events, (max(inst.t, inst.stall_until) + max(dv, 0.0) / inst.rate, serial, i, inst.version))

    def run(inst: _Instance, r, tokens: int, t: float, start: float, prefill: int) -> tuple:
        """Put a chunk of ``tokens`` tokens of ``r`` on ``inst``'s batch after ``prefill``."""
        nonlocal serial
        context = r.prompt_len + r.num_generated
        inst.stall_until = max(inst.t, inst.stall_until) + prefill * step.c_prefill
        inst.allocated += prefill
        serial += 1
        entry = (inst.v + tokens, serial, r, tokens, start, prefill, context, inst.v)
        heapq.heappush(inst.heap, entry)
        inst.n += 1
        inst.ctx += context
        inst.peak = max(inst.peak, inst.kv())
        return entry

    def queue(inst: _Instance) -> FreeQueue:
        """``inst``'s free queue with its front up to date: under vLLM's scheduler it holds
        every block no running request holds; under the ledger, what was allocated since
        was handed out from it."""
        if admission == "engine":
            inst.free.fit(kv_cap - inst.kv())
        else:
            inst.free.hand_out_since(inst.allocated)
        return inst.free

    def first_prefill(r, inst: _Instance) -> int:
        return 1 if r.group_id in inst.prompts else r.prompt_len

    def private(r, tokens: float) -> int:
        """Full blocks of a ledger request's KV past its prompt's: a group's prompt counts as
        cached on an instance once placed there (``first_prefill``), so records hold the rest."""
        return max(0, _blocks(tokens) - _blocks(r.prompt_len))

    def returned_prefill(inst: _Instance, r) -> int:
        """Tokens a chunk recomputes on an instance not holding its KV (moved, or given up
        there): its group's prompt if cached and what of its record the free queue still
        holds are hits, whole blocks, at most all but its last token (vLLM's bound)."""
        context = r.prompt_len + r.num_generated
        cached = queue(inst).take(r.request_id)
        if r.group_id in inst.prompts:
            cached += _blocks(r.prompt_len)
        return context - min(_blocks(cached), _blocks(context - 1))

    def join(d, t: float) -> None:
        r, i = d.request, d.instance
        inst = insts[i]
        inst.advance(t)
        if admission == "engine":
            inst.waiting.append(r)
            return
        for rid in d.kv_release:  # given up here: the ledger scheduler evicts them first
            queue(inst).free(GIVEN_UP, inst.parked.pop(rid, 0), rid)
        if r.last_instance is None:
            prefill = first_prefill(r, inst)
        elif shared_kv or (d.kv_resident if d.kv_resident is not None else r.last_instance == i):
            prefill = 1
        else:
            prefill = returned_prefill(inst, r)
        inst.parked.pop(r.request_id, None)  # running again: its blocks are in use
        inst.prompts.add(r.group_id)
        run(inst, r, r.tokens_this_chunk(d.max_tokens), t, t, prefill)

    def admit(i: int, t: float) -> None:
        """Engine admission: waiting requests first come while a slot is free and their
        context (plus one token) fits the KV cache (vLLM's scheduler)."""
        inst = insts[i]
        while inst.waiting and inst.n < cluster.max_batch:
            r = inst.waiting[0]
            context = r.prompt_len + r.num_generated
            if inst.n and inst.kv() + context - inst.shareable(r) + 1 > kv_cap:
                break
            inst.waiting.popleft()
            # (before ``hold``: a sibling running here shares the prompt's blocks, not the request itself)
            resumed = r.request_id in inst.preempted
            prefill = resumed_prefill(inst, r, context) if resumed else first_prefill(r, inst)
            inst.hold(r, 1)
            inst.prompts.add(r.group_id)
            inst.admitted.append(run(inst, r, r.tokens_this_chunk(r.remaining), t, t, prefill))

    def resumed_prefill(inst: _Instance, r, context: int) -> int:
        """Tokens a preempted request recomputes when it resumes: those of its freed blocks
        the free queue handed out since (tail first); the prompt's blocks its group held
        then, or holds now, stay cached."""
        shared = inst.preempted.pop(r.request_id, 0)
        taken = queue(inst).take(r.request_id)
        cached = (shared if taken or inst.shareable(r) else 0) + taken  # the prompt's, if a prefix survives
        cached = min(_blocks(max(cached, inst.shareable(r))), _blocks(context - 1))
        return context - cached

    def preempt(i: int, t: float) -> None:
        """The KV cache is full: the newest running request goes back to the front of the
        waiting queue, keeping its tokens (recorded as a segment the policy is not told of);
        its KV is freed and recomputed when it resumes."""
        nonlocal preemptions
        inst = insts[i]
        fq = queue(inst)  # before the preempted request's KV returns to it
        entry = inst.admitted.pop()
        inst.heap.remove(entry)
        heapq.heapify(inst.heap)
        _, _, r, tokens, start, prefill, context, v0 = entry
        progress = inst.v - v0
        done = min(tokens - 1, int(progress))
        r.add_chunk(i, done, start, t, prefill)
        inst.n -= 1
        inst.ctx = max(0.0, inst.ctx - (context + progress))
        inst.hold(r, -1)
        shared = inst.shareable(r)  # held by its group's running requests: not freed
        fq.free(LRU, _blocks(context + done) - shared, r.request_id)
        inst.preempted[r.request_id] = shared
        inst.waiting.appendleft(r)
        preemptions += 1

    # The ledger counts whole blocks: a capacity rounded up to them still holds the longest request.
    kv_blocks_tokens = -(-cluster.kv_tokens // KV_BLOCK_TOKENS) * KV_BLOCK_TOKENS
    kv = KVBudget([kv_blocks_tokens] * cluster.instances, KV_BLOCK_TOKENS, shared_kv=shared_kv)
    capacities = {"cap": cap, "kv": cluster.max_batch, "engine": 1 << 30}[admission]
    if getattr(policy, "needs_engine_step", False):  # the "auto" KV reserve reads the cluster's step time
        policy.engine_step = _step_seconds(step, workload)
    policy.reset(groups, [capacities] * cluster.instances, kv if admission == "kv" else None)
    ledger = getattr(policy, "ledger", None) if admission == "kv" else None
    touched: set[int] = set()
    for d in policy.next_dispatches():
        join(d, 0.0)
        touched.add(d.instance)
    ledger_peak = max(ledger.used) if ledger is not None else 0
    for i in touched:
        if admission == "engine":
            admit(i, 0.0)
        reschedule(i)
    end = 0.0
    while events:
        t, _, i, version = heapq.heappop(events)
        inst = insts[i]
        if version != inst.version:
            continue  # superseded by a later change on this instance
        count += 1
        inst.advance(t)
        inst.peak = max(inst.peak, inst.kv())  # KV held: the contexts grew since the last event
        touched = {i}
        while inst.heap and inst.heap[0][0] <= inst.v + 1e-9 * max(1.0, inst.v):  # float slack
            entry = heapq.heappop(inst.heap)
            _, _, r, tokens, start, prefill, context, _ = entry
            inst.n -= 1
            if admission == "engine":
                fq = queue(inst)  # before this request's KV returns to it
                inst.admitted.remove(entry)
                inst.hold(r, -1)
                fq.free(LRU, _blocks(context + tokens) - inst.shareable(r))
            inst.ctx = max(0.0, inst.ctx - (context + tokens))
            r.add_chunk(i, tokens, start, t, prefill)
            if admission == "kv":  # parked (the ledger keeps it resident) or done (evicted first)
                if r.done:
                    queue(inst).free(DONE, private(r, context + tokens))
                else:
                    inst.parked[r.request_id] = private(r, context + tokens)
            end = max(end, t)
            policy.on_chunk_done(r, i)
            for d in policy.next_dispatches():
                join(d, t)
                touched.add(d.instance)
            if ledger is not None:
                ledger_peak = max(ledger_peak, max(ledger.used))
        if admission == "engine":
            while inst.n > 1 and inst.kv() >= kv_cap * (1 - 1e-9):
                preempt(i, t)
            for j in touched:
                admit(j, t)
        if step.c_host:  # a batch changed: every instance of the host steps at a new speed
            touched = range(len(insts))
        for j in touched:
            if j != i:
                insts[j].advance(t)
            reschedule(j)
    if not policy.finished:
        raise RuntimeError(f"policy {policy.name} stalled with {policy.outstanding} requests left")
    kv_peak = max(inst.peak for inst in insts) / cluster.kv_tokens
    if admission == "kv" and getattr(policy, "ledger", None) is not None:
        # the ledger's own count: a group's shared prompt blocks are held once, not per request
        kv_peak = ledger_peak * KV_BLOCK_TOKENS / kv_blocks_tokens
    return SimResult([r for g in groups for r in g], end, cap if admission == "cap" else 0, kv_peak, count,
                     preemptions)
