"""Seer's rollout policy: divided rollout + context-aware scheduling (Seer §3.2-3.3, Alg. 2),
placed by a KV ledger.

Each switch can be turned off for ablations: ``divided=False`` runs requests whole,
``context_aware=False`` dispatches first come, first served by each request's first
arrival (vLLM's own order: a started request goes before a later one, as a preempted one
does).
"""
from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable

from umbra.rollout.policies import kv_reserve
from umbra.rollout.policies.base import Dispatch, Policy
from umbra.rollout.policies.kv_ledger import KVBudget, KVLedger
from umbra.rollout.policies.length_history import LengthHistory
from umbra.rollout.request import Request


class SeerPolicy(Policy):
    """Divided rollout with context-aware scheduling.

    Divided rollout (Seer §3.2): a request runs ``chunk_tokens`` at a time
    (``max_tokens = min(chunk_tokens, original_max - generated)``) and goes back to the
    request buffer after each chunk: every chunk end is a decision point.

    Context-aware scheduling (Seer Alg. 2): one decision at a time over the whole buffer,
    started requests and new ones alike. The first request of each group is its
    speculative (probe) request; probes go first, fewest generated tokens first. The rest
    go by the largest group length estimate: the longest completed response of the group
    so far, ``max_tokens`` while none completed.

    Placement by KV (Seer §3.2; the ledger is ours, since we have no global KV pool): with
    a :class:`KVBudget` a chunk starts only where its KV fits now
    (:class:`~umbra.rollout.policies.kv_ledger.KVLedger`); a request parked between chunks
    keeps its KV on its instance, so its next chunk goes there (affinity). Without a
    budget, ``capacities`` alone bound each instance (the worst-case cap).

    Ours, where the paper is silent:
    - ``estimate_floor``: a request that has generated more than its group's estimate is
      ranked by what it has generated (the open question in SEER.md).
    - ``group_floor``: such a request also raises its group's estimate to what it has
      generated (the group's longest response is at least that long), so the group's waiting
      requests rank by it too.
    - Tie-break among equal estimates: a started request before a new one (its KV is held
      and it frees it sooner), then first come.
    - A new request is admitted only while the instance keeps a growth reserve free for its
      residents (``growth_reserve``, default ``"auto"``): True, one chunk per parked request
      (adaptive gives up 14-20x less KV than it on qwen2-vl-72b in the simulator, and the same
      where it gives up none); ``"auto"``, "estimate" or "adaptive" chosen at each rollout's
      start from the previous rollout's lengths and the engine's step time (``engine_step``,
      set by the driver; adaptive without it): :mod:`~umbra.rollout.policies.kv_reserve`; ``"estimate"``,
      what every resident still adds if it ends at its group's estimate (none given up, at
      the cost of concurrency); ``"adaptive"``, one chunk per parked request until the
      instance first has to give up KV, the estimate from then on (kept across the run's
      rollouts: an instance that ran out of KV once is short of it in every iteration; "auto"
      forgets it where it chooses adaptive after a rollout of short responses, as
      :func:`~umbra.rollout.policies.kv_reserve.over_reserved` says);
      False, none.
    - A waiting resident whose growth does not fit gives up the KV of parked requests ranked
      strictly below it on its instance (lowest first; counted in ``kv_given_up``); a new
      request evicts a started one only with ``fresh_evicts`` (default off).
    - ``fresh_evicts`` (ours, off): a new request that fits nowhere gives up the KV of parked
      requests ranked strictly below it on the instance where the fewest must go, when that
      makes room for its chunk above the growth reserve. It pays only where the ranking is
      right: on qwen2-vl-72b (the one preset whose KV runs short) the true-length oracle
      gains 1.168x -> 1.206x ``verl`` and its tail 0.51x -> 0.29x, while Alg. 2's group
      estimates lose (1.130x -> 1.111x, tail 0.66x -> 0.68x, 564 -> 1,298 requests' KV
      given up): they rest on the few responses finished so far. Probes are never given up
      this way. Where re-prefill costs
      as much as on this CPU it loses even with true lengths (below); ``oracle-divided-evict``
      (:class:`~umbra.rollout.policies.seer_oracle.SeerOraclePolicy`) turns it on.
    - When the best new request fits nowhere, no later new request overtakes it (longest
      first holds), but parked requests that fit their instance still run (backfill).
    - A move to another instance only when that instance would otherwise leave slots
      idle, and only from an instance running ``affinity_spread`` more chunks; it is
      counted in ``migrations`` and re-prefills the context there.
    - An instance with nothing running whose best parked request cannot grow gives up its
      lowest-ranked parked requests' KV until it can, equals included.
    - Anti-starvation: a request that has waited ``starvation_limit`` decisions goes first.
    - ``balance_spread`` (None = off, or 1 with a global KV pool; 0 = off): a parked request's next
      chunk goes to the least loaded instance holding at least that many fewer requests
      (running or parked) where it fits above the growth reserve, re-prefilling its context
      there (a migration): instances whose loads drift apart slow the longest requests down
      (measured in the simulator: moonlight 90% -> 99% of ``oracle-lfs``). With
      ``KVBudget.shared_kv`` (the paper's global pool) a move re-prefills nothing, so the
      default there is 1: every chunk may go to a less loaded instance, as Seer §3.2's
      request-level balancing over the pool lets it.
    - ``group_affinity`` (default on): a request with no KV anywhere starts where its group's
      prompt is resident, when its chunk fits there above the growth reserve (the most free KV
      among such instances), else where most KV is free. Its prompt blocks are then shared
      through the prefix cache instead of held (and prefilled) once more, and a group's KV
      stays together as veRL's split by group keeps it. Measured in the simulator (no global
      pool): moonlight 1.21x -> 1.27x ``verl``, kimi-k2 1.04x -> 1.06x, qwen2-vl-72b 1.13x
      either way; on real engines (GSM8K, temperature 0.7) 0.89x -> 0.98x ``verl`` (level
      by rollout time), where the split groups had left the ledger short of KV.
    - ``work_placement`` (default off): a request with no KV anywhere starts where the least
      decode work is resident (each resident's :meth:`_final_estimate` minus what it has
      generated), group affinity and free KV breaking ties. Probes go first, so group affinity
      pins every group to the instance its probe got at the rollout's start, before any length
      is known; groups whose lengths differ then leave one instance with more work. On the
      CPU engines (GSM8K, estimate reserve) seer's instances ended 20.6 and 20.5 s apart in two
      runs; this placement ended them 1.9 s apart, throughput 1.06x and tail 0.47x of
      ``seer-no-spec`` in the same run, and 1.04x and 1.01x in two more pairs; three more
      pairs gave 0.93x, 0.95x and 1.07x (mean of six 1.01x, tails no shorter), gaining only
      where group affinity's instances ended far apart. The simulator agrees on that trace
      (1.04x) but not on the presets under their adaptive reserve (moonlight 0.96x, kimi-k2
      0.99x, qwen2-vl-72b 1.00x; on moonlight about what turning group affinity off loses,
      below; under the estimate reserve 1.01x and 1.00x), so it stays a switch (``seer-work``
      in the benchmark).
    - ``length_history`` (True, or a :class:`~umbra.rollout.policies.length_history.LengthHistory`;
      kept across rollouts): a group's estimate starts at the longest remembered response to
      its prompt instead of unknown, and every finished response is remembered.
    """

    name = "seer"

    def __init__(self, chunk_tokens: int = 64, divided: bool = True, context_aware: bool = True,
                 affinity_spread: int = 1, starvation_limit: int = 10_000, kv_block_tokens: int = 1,
                 estimate_floor: bool = True, growth_reserve: bool | str = "auto", length_history=None,
                 balance_spread: int | None = None, group_floor: bool = False, group_affinity: bool = True,
                 fresh_evicts: bool = False, work_placement: bool = False):
        if chunk_tokens < 1:
            raise ValueError("chunk_tokens must be >= 1")
        if kv_block_tokens < 1:
            raise ValueError("kv_block_tokens must be >= 1")
        self.kv_block_tokens = kv_block_tokens
        self.chunk_tokens = chunk_tokens
        self.chunked = divided
        self.admission = "kv" if divided else "cap"
        self.context_aware = context_aware
        self.affinity_spread = affinity_spread
        self.starvation_limit = starvation_limit
        self.estimate_floor = estimate_floor
        self.group_floor = group_floor
        self.growth_reserve = growth_reserve
        self.balance_spread = balance_spread
        self.group_affinity = group_affinity
        self.fresh_evicts = fresh_evicts
        self.work_placement = work_placement
        # True: a history of its own, kept across this object's rollouts (the run's policy object)
        self.length_history = LengthHistory() if length_history is True else (length_history or None)
        self.tight: set[int] = set()  # instances that gave up KV ("adaptive" reserve; kept across rollouts)
        self.by_id: dict[str, Request] = {}  # this rollout's requests (the last one's until reset)
        self.previous_fill: float | None = None  # the last rollout's kv_reserve.fill
        # seconds of one decode step of a batch on the engines (``"auto"`` reserve; the driver sets it)
        self.engine_step: Callable[[int], float] | None = None
        self.reserve_mode = growth_reserve  # the reserve in force ("auto" resolved by reset)

    @property
    def needs_engine_step(self) -> bool:
        """Whether the driver should measure the engines' step time for this policy."""
        return self.growth_reserve == "auto" and self.chunked

    def reset(self, groups, capacities, kv: KVBudget | None = None) -> None:
        self.previous_fill = kv_reserve.fill(self.by_id.values())
        super().reset(groups, capacities, kv)
        self.ledger = KVLedger(kv) if kv is not None and self.chunked else None
        self.spread = (self.balance_spread or None) if self.balance_spread is not None else (
            1 if self.ledger is not None and kv.shared_kv else None)  # 0: off, even under a shared pool
        if self.ledger is not None:
            longest = max((r.prompt_len + r.max_tokens for g in groups for r in g), default=0)
            if any(0 < c < self.ledger.blocks(longest) for c in self.ledger.capacity):
                raise ValueError(f"a request may hold {longest} tokens, more than an instance's KV cache")
        self.reserve_mode = self.growth_reserve
        if self.growth_reserve == "auto":
            self.reserve_mode = self._auto_reserve(groups) if self.ledger is not None else "adaptive"
        history = self.length_history
        self.estimate: dict[int, int | None] = {
            g[0].group_id: history.prior(g[0]) if history is not None else None for g in groups if g}
        self.speculative = {g[0].request_id for g in groups if g} if self.context_aware else set()
        self.members = {g[0].group_id: g for g in groups if g}
        self.by_id = {r.request_id: r for g in groups for r in g}
        self.position = {r.request_id: n for n, r in enumerate(self.by_id.values())}  # arrival order
        self.migrations = 0
        self.estimate_version = 0
        self._growth_cache: dict[int, tuple] = {}
        self._work_cache: dict[int, tuple] = {}
        self.tick = 0      # decisions so far (the anti-starvation clock)
        self.counter = 0   # heap entry serial: first come among equal keys; marks stale entries
        self.heaps: dict[int | None, list[tuple]] = {None: []}  # None: fresh; i: parked on instance i
        self.arrivals: deque[tuple[int, Request]] = deque()
        self.entered: dict[str, int] = {}  # waiting request_id -> tick it (re)entered the buffer
        self.entry: dict[str, int] = {}    # waiting request_id -> serial of its live heap entry
        for g in groups:
            for r in g:
                self._enqueue(r)

    def _auto_reserve(self, groups) -> str:
        """The ``"auto"`` reserve's choice for this rollout (ours, :func:`kv_reserve.choose`:
        the engine's step time, weighed by the previous rollout's lengths)."""
        reqs = [r for g in groups for r in g]
        if not reqs:
            return "adaptive"
        prompt = round(sum(r.prompt_len for r in reqs) / len(reqs))
        worst, full = kv_reserve.batches(self.ledger, self.capacities, prompt, max(r.max_tokens for r in reqs),
                                         self.chunk_tokens)
        mode = kv_reserve.choose(self.engine_step, worst, full, previous_fill=self.previous_fill)
        if mode == "adaptive" and kv_reserve.over_reserved(self.previous_fill):
            # starts untight: a tightness learned in a longer rollout would bring "estimate" back
            self.tight.clear()
        return mode

    # -- buffer ---------------------------------------------------------------
    def _key(self, r: Request) -> tuple:
        if not self.context_aware:
            return (0, self.position[r.request_id])  # first come, by first arrival
        if r.request_id in self.speculative:
            return (0, r.num_generated)  # probes: fewest generated first
        est = self.estimate[r.group_id]
        est = r.max_tokens if est is None else est
        if self.estimate_floor:
            est = max(est, r.num_generated)
        return (1, -est, 0 if r.num_generated else 1)

    def _home(self, r: Request) -> int | None:
        """Where ``r`` waits: the instance holding its KV, or None (fresh: no KV anywhere)."""
        if self.ledger is not None:
            return self.ledger.home(r.request_id)
        last = r.last_instance  # no ledger: the prefix cache of its last instance, if alive
        return last if last is not None and self.capacities[last] > 0 else None

    def _push(self, r: Request) -> None:
        self.counter += 1
        self.entry[r.request_id] = self.counter
        heapq.heappush(self.heaps.setdefault(self._home(r), []), (self._key(r), self.counter, r))

    def _enqueue(self, r: Request) -> None:
        self.entered[r.request_id] = self.tick
        self.arrivals.append((self.tick, r))
        self._push(r)

    def _take(self, r: Request) -> Request:
        del self.entered[r.request_id]
        del self.entry[r.request_id]
        return r

    def _live(self, e: tuple) -> bool:
        return self.entry.get(e[2].request_id) == e[1]

    def _top(self, home: int | None) -> tuple | None:
        """Best live entry of ``home``'s heap (stale entries dropped), or None."""
        heap = self.heaps.get(home)
        while heap and not self._live(heap[0]):
            heapq.heappop(heap)
        return heap[0] if heap else None

    def _pop(self, e: tuple) -> Request:
        r = e[2]
        heap = self.heaps[self._home(r)]
        if heap and heap[0] is e:  # else (a starved waiter) its entry goes stale in place
            heapq.heappop(heap)
        return self._take(r)

    def _starved(self) -> tuple | None:
        """The oldest waiter's live entry when it has waited ``starvation_limit`` decisions."""
        while self.arrivals and self.entered.get(self.arrivals[0][1].request_id) != self.arrivals[0][0]:
            self.arrivals.popleft()  # stale: dispatched since, or re-queued later
        if self.arrivals and self.tick - self.arrivals[0][0] >= self.starvation_limit:
            r = self.arrivals[0][1]
            return (self._key(r), self.entry[r.request_id], r)
        return None

    def _update_estimate(self, group_id: int, length: int) -> None:
        """A response of the group completed: raise its estimate and re-key its waiters."""
        old = self.estimate[group_id]
        if old is not None and old >= length:
            return
        self.estimate[group_id] = length
        self.estimate_version += 1
        if self.context_aware:
            for r in self.members[group_id]:
                if r.request_id in self.entry:
                    self._push(r)  # the old entry becomes stale

    def chunk_budget(self, r: Request) -> int:
        """``max_tokens`` of ``r``'s next chunk: ``min(chunk_tokens, remaining)``, shortened
        by less than one KV block so that the context after it is ``1 (mod block)`` tokens
        long. vLLM serves a prefix-cache hit in whole blocks and always computes the last
        context token, so such a context re-prefills 1 token, any other up to a block."""
        if not self.chunked:
            return r.remaining
        budget = min(self.chunk_tokens, r.remaining)
        block = self.kv_block_tokens
        if budget == r.remaining or block == 1 or self.chunk_tokens < block:
            return budget
        end = r.prompt_len + r.num_generated + budget
        return budget - (end - 1) % block

    # -- placement ------------------------------------------------------------
    def _slot(self, i: int) -> bool:
        return self.running[i] < self.capacities[i]

    def _reserve(self, i: int, n_gone: int = 0, growth_gone: int = 0) -> int:
        """Blocks kept free on ``i`` for its parked requests' next chunks (ours); as it would be
        once ``n_gone`` parked requests whose :meth:`_growth` sums to ``growth_gone`` gave up
        their KV (which makes an adaptive instance tight)."""
        led = self.ledger
        mode = self.reserve_mode
        if mode == "estimate" or (mode == "adaptive" and (i in self.tight or n_gone)):
            return self._expected_growth(i) - growth_gone
        return (led.n_parked[i] - n_gone) * -(-self.chunk_tokens // led.block) if mode else 0

    def _expected_growth(self, i: int) -> int:
        """Blocks the residents of ``i`` will still add if each ends at its group's estimate
        (cached until the ledger changes on ``i`` or an estimate changes)."""
        return self._cached(self._growth_cache, i, lambda: sum(self._growth(rid, i) for rid in self.ledger.on[i]))

    def _cached(self, cache: dict[int, tuple], i: int, compute: Callable[[], int]) -> int:
        """``compute()`` for instance ``i``, kept in ``cache`` until the ledger changes on ``i`` or
        an estimate changes."""
        key = (self.ledger.version[i], self.estimate_version)
        hit = cache.get(i)
        if hit is None or hit[0] != key:
            hit = cache[i] = (key, compute())
        return hit[1]

    def _growth(self, rid: str, i: int) -> int:
        """Blocks resident ``rid`` of ``i`` still adds if it ends at its group's estimate."""
        led, r = self.ledger, self.by_id[rid]
        final = self._final_estimate(r)
        return max(0, led.private(r, i, r.prompt_len + min(final, r.max_tokens)) - led.residents[rid].private)

    def _work(self, i: int) -> int:
        """Output tokens the residents of ``i`` are still expected to decode, each to its
        :meth:`_final_estimate` (``work_placement``, ours; cached as :meth:`_expected_growth` is)."""
        return self._cached(self._work_cache, i, lambda: sum(
            self._final_estimate(r) - r.num_generated for r in map(self.by_id.get, self.ledger.on[i])))

    def _final_estimate(self, r: Request) -> int:
        """Output tokens ``r`` is expected to end at: its group's estimate (``max_tokens``
        while unknown), at least one more than it has generated."""
        est = self.estimate[r.group_id]
        return r.max_tokens if est is None else max(est, r.num_generated + 1)

    def _place_fresh(self, r: Request) -> int | None:
        """Instance for a request with no KV anywhere: a free slot and, with a ledger, room for
        its chunk above the growth reserve; with ``work_placement`` the least resident decode
        work first; then, with ``group_affinity``, an instance holding its group's prompt; then
        the most free KV (else free slots)."""
        budget = self.chunk_budget(r)
        best, best_key = None, None
        led = self.ledger
        for i in range(len(self.capacities)):
            if not self._slot(i):
                continue
            if led is not None:
                if not led.fits(r, i, budget, self._reserve(i)):
                    continue
                grouped = self.group_affinity and led.holds_group(r, i)
                key = (grouped, led.free(i) - self._reserve(i), self.capacities[i] - self.running[i], -i)
                if self.work_placement:
                    key = (-self._work(i),) + key
            else:
                key = (self.capacities[i] - self.running[i], -i)
            if best_key is None or key > best_key:
                best, best_key = i, key
        return best

    def _fits_home(self, r: Request, i: int) -> bool:
        return self._slot(i) and (self.ledger is None or self.ledger.fits(r, i, self.chunk_budget(r)))

    def _dispatch(self, r: Request, inst: int) -> Dispatch:
        budget = self.chunk_budget(r)
        resident = None
        if self.ledger is not None:
            resident = self.ledger.home(r.request_id) == inst or (self.ledger.budget.shared_kv and r.num_generated > 0)
            if self.ledger.start(r, inst, budget) and not self.ledger.budget.shared_kv:
                self.migrations += 1  # its context is re-prefilled there (measured by the instances)
        else:
            last = r.last_instance
            if last is not None and last != inst and self.capacities[last] > 0:
                self.migrations += 1
        self.tick += 1
        return self._start(r, inst, budget, resident)

    def next_dispatches(self) -> list[Dispatch]:
        out: list[Dispatch] = []
        while self.entered and any(self._slot(i) for i in range(len(self.capacities))):
            d = self._decide()
            if d is None:
                d = self._migrate() or self._give_up_and_decide()
            if d is None:
                break
            out.append(d)
        return out

    def _decide(self) -> Dispatch | None:
        """One Alg. 2 decision: the best waiter that can start now, or None."""
        starved = self._starved()
        if starved is not None:
            r = starved[2]
            home = self._home(r)
            inst = home if home is not None and self._fits_home(r, home) else (
                self._place_fresh(r) if home is None else None)
            if inst is not None:
                return self._dispatch(self._pop(starved), inst)
        fresh_blocked = False
        tops = []
        for h in self.heaps:
            e = self._top(h)
            if e is not None:
                tops.append((e[0], e[1], h, e))
        for key, serial, h, e in sorted(tops, key=lambda t: (t[0], t[1])):
            if not self._live(e):
                continue  # given up by an earlier candidate's make-room in this decision
            r = e[2]
            if h is None:
                if fresh_blocked:
                    continue
                inst = self._place_fresh(r)
                if inst is None and self.fresh_evicts:
                    inst = self._evict_for_fresh(e)
                if inst is None:
                    fresh_blocked = True  # no later new request overtakes it
                    continue
            else:
                j = self._balance_target(r, h)
                if j is not None:
                    return self._dispatch(self._pop(e), j)
                if not self._slot(h) or not (self._fits_home(r, h) or self._make_room(h, e)):
                    continue
                inst = h
            return self._dispatch(self._pop(e), inst)
        return None

    def _balance_target(self, r: Request, h: int) -> int | None:
        """An instance holding at least ``spread`` fewer requests (running or parked) than
        ``r``'s home ``h`` where ``r``'s next chunk fits above the growth reserve: the least
        loaded such one, else None (ours)."""
        led = self.ledger
        if self.spread is None or led is None:
            return None
        n_h, best, best_n = len(led.on[h]), None, None
        budget = self.chunk_budget(r)
        for j in range(len(self.capacities)):
            n_j = len(led.on[j])
            if j == h or n_h - n_j < self.spread or not self._slot(j) or self.capacities[j] <= 0:
                continue
            if (best_n is None or n_j < best_n) and led.fits(r, j, budget, self._reserve(j)):
                best, best_n = j, n_j
        return best

    def _make_room(self, i: int, e: tuple, equals: bool = False) -> bool:
        """Give up the KV of parked requests on ``i`` ranked below ``e`` (lowest first;
        ``equals``: ranked the same too) until ``e``'s chunk fits there; True when it then
        fits. Nothing is given up when even all of them would not make room (ours: Alg. 2's
        order decides whose KV stays)."""
        led = self.ledger
        if led is None or not self._slot(i) or not led.n_parked[i]:
            return False
        r = e[2]
        lower = self._ranked_below(i, e, equals)
        # (the private blocks alone: shared prompt blocks may come free too, so an idle
        # instance, ``equals``, skips this check and must make room)
        if not equals and led.need(r, i, self.chunk_budget(r)) > led.free(i) + sum(
                led.residents[x[2].request_id].private for x in lower):
            return False
        for x in lower:
            if led.fits(r, i, self.chunk_budget(r)):
                break
            self._give_up(i, x)
        return led.fits(r, i, self.chunk_budget(r))

    def _ranked_below(self, i: int, e: tuple, equals: bool = False) -> list[tuple]:
        """Live entries of requests parked on ``i`` ranked strictly below ``e`` (``equals``: or the
        same), lowest first. Equals (e.g. groups still unknown) keep their KV unless ``equals``."""
        lower = [x for x in self.heaps.get(i, ()) if self._live(x) and x is not e
                 and (x[0] > e[0] or (equals and (x[0], x[1]) > (e[0], e[1])))]
        return sorted(lower, key=lambda x: (x[0], x[1]), reverse=True)

    def _give_up(self, i: int, x: tuple) -> None:
        self.ledger.give_up(x[2])
        self.tight.add(i)
        self._push(x[2])  # now fresh: it waits in the fresh heap (its old entry goes stale)

    def _evict_for_fresh(self, e: tuple) -> int | None:
        """``fresh_evicts`` (ours): the instance where giving up the fewest parked requests
        ranked below the new request ``e`` (lowest first) makes room for its chunk above the
        growth reserve; their KV is given up and the instance returned. None, with nothing
        given up, where no instance with a free slot gets room that way."""
        best = None
        for i in range(len(self.capacities)):
            if self._slot(i) and self.ledger.n_parked[i]:
                gone = self._fewest_to_give_up(e, i)
                if gone is not None and (best is None or len(gone) < len(best[1])):
                    best = (i, gone)
        if best is None:
            return None
        i, gone = best
        for x in gone:
            self._give_up(i, x)
        return i

    def _fewest_to_give_up(self, e: tuple, i: int) -> list[tuple] | None:
        """The shortest lowest-first run of parked entries on ``i`` ranked below ``e`` whose
        give-up lets ``e``'s chunk fit above the reserve that remains, or None. Counts a
        group's prompt blocks as freed once its last resident there goes. Probes keep their KV
        (they would otherwise give each other up in turn, fewest generated first)."""
        led, r = self.ledger, e[2]
        need, free, growth = led.need(r, i, self.chunk_budget(r)), led.free(i), 0
        refs, left, gone = led.group_refs[i], {}, []
        # (with none given up it does not fit: _place_fresh has just found so)
        for x in (x for x in self._ranked_below(i, e) if x[2].request_id not in self.speculative):
            rid = x[2].request_id
            res = led.residents[rid]
            gone.append(x)
            free += res.private
            growth += self._growth(rid, i)
            left[res.group] = left.get(res.group, refs[res.group][0]) - 1
            if not left[res.group]:  # its prompt blocks come free, and ``r`` would hold them anew
                free += refs[res.group][1]
                need += refs[res.group][1] if res.group == led.prompt_key(r) else 0
            if need + self._reserve(i, len(gone), growth) <= free:
                return gone
        return None

    def _migrate(self) -> Dispatch | None:
        """Move the best parked request of a busier instance to one that has free slots and
        room but nothing it may take (ours)."""
        for j in range(len(self.capacities)):
            if not self._slot(j):
                continue
            cands = []
            for h, _ in list(self.heaps.items()):
                if h is None or h == j or self.running[h] - self.running[j] < self.affinity_spread:
                    continue
                e = self._top(h)
                if e is None or self._fits_home(e[2], h):
                    continue
                r = e[2]
                if self.ledger is None or self.ledger.fits(r, j, self.chunk_budget(r), self._reserve(j)):
                    cands.append(e)
            if cands:
                e = min(cands, key=lambda e: (e[0], e[1]))
                return self._dispatch(self._pop(e), j)
        return None

    def _give_up_and_decide(self) -> Dispatch | None:
        """An instance with nothing running and parked requests that cannot grow gives up the
        KV of its lowest-ranked parked requests, equals included, until its best one fits (ours)."""
        for i in range(len(self.capacities)):
            if self.running[i] or self.ledger is None:
                continue
            best = self._top(i)
            if best is not None and self._make_room(i, best, equals=True):
                return self._dispatch(self._pop(best), i)
        return None

    def on_chunk_done(self, request: Request, instance: int) -> None:
        if self.ledger is not None:
            self.ledger.chunk_done(request)
        if request.done:
            self._update_estimate(request.group_id, request.num_generated)
            if self.length_history is not None:
                self.length_history.record(request)
        elif self.group_floor and self.estimate[request.group_id] is not None:  # None: max_tokens already
            self._update_estimate(request.group_id, request.num_generated)
        super().on_chunk_done(request, instance)

    def _requeue(self, request: Request) -> None:
        self._enqueue(request)

    def on_instance_lost(self, instance: int, in_flight: list[Request]) -> None:
        """The lost instance's parked requests lose their KV: they wait as fresh requests;
        its in-flight chunks come back the same way."""
        if self.ledger is not None:
            self.ledger.lose(instance)
        stranded = [e[2] for e in self.heaps.pop(instance, []) if self._live(e)]
        super().on_instance_lost(instance, in_flight)  # in-flight ones come back through _requeue
        for r in stranded:
            self._push(r)  # same tick of entry: only its heap changes
