"""The KV ledger: which requests' KV lives on which instance, in blocks (Seer §3.2's
proactive placement, without its global KV pool: ours).

A request is *resident* on an instance from its first chunk there until it finishes, moves
or is given up: while a chunk runs it holds its context plus the chunk's growth; between
chunks (parked) it holds its context, kept by vLLM's prefix cache. A group's full prompt
blocks are shared by its residents on one instance (vLLM's prefix cache hashes whole
blocks), so they are counted once per group and instance. A chunk is admitted only where
its growth fits, so the engine never has to preempt.

With ``shared_kv`` parked requests live in a global pool (the paper's Mooncake-style
store): only running chunks hold instance KV, and a move costs no re-prefill.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class KVBudget:
    """Per-instance KV capacity in tokens (``tokens[i]``), the engines' block size, and
    ``lookahead`` tokens every running sequence needs beyond its chunk (speculative slots)."""

    tokens: list[int]
    block_tokens: int = 16
    lookahead: int = 0
    shared_kv: bool = False

    def __post_init__(self):
        if self.block_tokens < 1 or self.lookahead < 0 or not self.tokens or min(self.tokens) < 0:
            raise ValueError("a KV budget needs block_tokens >= 1, lookahead >= 0 and capacities >= 0")


class _Resident:
    __slots__ = ("instance", "group", "private", "running")

    def __init__(self, instance: int, group: int, private: int, running: bool):
        self.instance, self.group, self.private, self.running = instance, group, private, running


class KVLedger:
    """Blocks held per instance; every method keeps ``used(i) <= capacity(i)`` for admitted chunks."""

    def __init__(self, budget: KVBudget):
        self.budget = budget
        self.block = budget.block_tokens
        self.capacity = [t // self.block for t in budget.tokens]
        self.used = [0] * len(self.capacity)
        self.residents: dict[str, _Resident] = {}
        # per instance: (group, prompt length) -> [residents there, prompt blocks they share (held once)]
        self.group_refs: list[dict[tuple[int, int], list[int]]] = [{} for _ in self.capacity]
        self.n_parked = [0] * len(self.capacity)
        self.on: list[set[str]] = [set() for _ in self.capacity]  # request ids resident per instance
        self.version = [0] * len(self.capacity)  # bumped by every change on an instance (callers cache by it)
        # per instance: requests whose KV there the ledger dropped (given up, moved away) and
        # the engine has not been told yet; the next chunk sent there carries them
        self.dropped: list[list[str]] = [[] for _ in self.capacity]
        self.given_up = 0          # parked requests whose KV the policy gave up (their next chunk re-prefills)
        self.given_up_tokens = 0   # context tokens of those requests

    def blocks(self, tokens: int) -> int:
        """Blocks that hold ``tokens`` tokens."""
        return -(-tokens // self.block)

    def _prompt_blocks(self, r) -> int:
        """Full blocks of ``r``'s prompt (shareable through the prefix cache)."""
        return r.prompt_len // self.block

    @staticmethod
    def prompt_key(r) -> tuple[int, int]:
        """Requests that share prompt blocks: a group's (the simulator's workloads may give a
        group's requests prompts of different lengths; those share nothing)."""
        return r.group_id, r.prompt_len

    def private(self, r, instance: int, tokens: int) -> int:
        """Blocks of a ``tokens``-token context of ``r`` beyond its full prompt blocks, which
        its group's residents on the instance hold once."""
        return self.blocks(tokens) - self._prompt_blocks(r)

    def home(self, request_id: str) -> int | None:
        """The instance holding the request's KV, or None."""
        res = self.residents.get(request_id)
        return res.instance if res else None

    def holds_group(self, r, instance: int) -> bool:
        """True when ``r``'s group has residents on ``instance`` (its prompt blocks are held there)."""
        return self.prompt_key(r) in self.group_refs[instance]

    def free(self, instance: int) -> int:
        """Free blocks on ``instance``."""
        return self.capacity[instance] - self.used[instance]

    def need(self, r, instance: int, budget: int) -> int:
        """Blocks ``instance`` must add to run a chunk of ``budget`` tokens of ``r`` there."""
        tokens = r.prompt_len + r.num_generated + budget + self.budget.lookahead
        res = self.residents.get(r.request_id)
        if res is not None and res.instance == instance:
            return max(0, self.private(r, instance, tokens) - res.private)  # shared_kv: parked holds 0
        group = self.group_refs[instance].get(self.prompt_key(r))
        return self.private(r, instance, tokens) + (0 if group else self._prompt_blocks(r))

    def fits(self, r, instance: int, budget: int, reserve: int = 0) -> bool:
        """True when a chunk of ``r`` fits on ``instance`` leaving ``reserve`` blocks free."""
        return self.need(r, instance, budget) + reserve <= self.free(instance)

    def start(self, r, instance: int, budget: int) -> bool:
        """Reserve the chunk's blocks on ``instance``; returns True when ``r`` moves there
        from another instance (its KV there is released: a migration). Raises ValueError
        when the chunk does not fit."""
        need = self.need(r, instance, budget)
        if need > self.free(instance):
            raise ValueError(f"{r.request_id}: {need} KV blocks needed on instance {instance}, "
                             f"{self.free(instance)} free")
        res = self.residents.get(r.request_id)
        moved = res is not None and res.instance != instance
        if moved:
            self.dropped[res.instance].append(r.request_id)
            self.release(r.request_id)
            res = None
        if res is None:
            refs = self.group_refs[instance]
            group = refs.get(self.prompt_key(r))
            if group is None:
                refs[self.prompt_key(r)] = group = [0, self._prompt_blocks(r)]
                self.used[instance] += group[1]
            group[0] += 1
            self.residents[r.request_id] = res = _Resident(instance, self.prompt_key(r), 0, True)
            self.on[instance].add(r.request_id)
        elif not res.running:
            self.n_parked[instance] -= 1
        private = self.private(r, instance, r.prompt_len + r.num_generated + budget + self.budget.lookahead)
        self.used[instance] += private - res.private
        self.version[instance] += 1
        res.private, res.running = private, True
        return moved

    def chunk_done(self, r) -> None:
        """A chunk of ``r`` ended: it keeps its context (parked), or releases all when done.
        Unused reserved growth (the chunk ended early, lookahead) is returned."""
        res = self.residents.get(r.request_id)
        if res is None:
            return
        if r.done:
            self.release(r.request_id)
            return
        # shared_kv: parked in the global pool, nothing held here
        private = 0 if self.budget.shared_kv else self.private(r, res.instance, r.prompt_len + r.num_generated)
        self.used[res.instance] += private - res.private
        self.version[res.instance] += 1
        if res.running:
            self.n_parked[res.instance] += 1
        res.private, res.running = private, False

    def release(self, request_id: str) -> None:
        """Forget a request's KV on its instance (finished, moved, given up or lost)."""
        res = self.residents.pop(request_id, None)
        if res is None:
            return
        self.on[res.instance].discard(request_id)
        self.version[res.instance] += 1
        self.used[res.instance] -= res.private
        if not res.running:
            self.n_parked[res.instance] -= 1
        refs = self.group_refs[res.instance]
        group = refs[res.group]
        group[0] -= 1
        if not group[0]:
            del refs[res.group]
            self.used[res.instance] -= group[1]

    def give_up(self, r) -> None:
        """The policy gives up a parked request's KV (counted: its next chunk re-prefills)."""
        self.given_up += 1
        self.given_up_tokens += r.prompt_len + r.num_generated
        res = self.residents.get(r.request_id)
        if res is not None:
            self.dropped[res.instance].append(r.request_id)
        self.release(r.request_id)

    def take_dropped(self, instance: int) -> tuple[str, ...]:
        """The requests whose KV on ``instance`` the ledger dropped since the last call: the
        engine there evicts them first (``umbra.rollout.ledger_scheduler``)."""
        out, self.dropped[instance] = tuple(self.dropped[instance]), []
        return out

    def lose(self, instance: int) -> None:
        """The instance died: its KV is gone and it admits nothing more."""
        for rid in list(self.on[instance]):
            self.release(rid)
        self.dropped[instance] = []
        self.capacity[instance] = 0
