"""The rollout manager: the one owner of a run's rollout side (slime's "rollout" part).

It holds the instance pool, the rollout policy, the per-instance capacities and, with
grouped speculative decoding, the draft server; ``generate`` turns an iteration's prompts
into a :class:`RolloutBatch`. The job's loop and ``umbra bench rollout`` both call it, so
the benchmark measures exactly what a run does.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

from umbra.rollout.batch import RolloutBatch, Sample
from umbra.rollout.capacity import concurrency_cap
from umbra.rollout.instance_pool import InstancePool
from umbra.rollout.policies.kv_ledger import KVBudget
from umbra.rollout.metrics import engine_metrics, policy_counters, request_records, rollout_metrics
from umbra.rollout.request import make_groups
from umbra.rollout.runner import run_rollout

log = logging.getLogger(__name__)

KV_HEADROOM = 0.02   # of each engine's KV blocks kept out of the ledger (block rounding, shared-prompt timing)
SPEC_LOOKAHEAD = 8   # draft slots vLLM reserves per running sequence (the proposer's gamma_max)
UNLIMITED = 1 << 30  # "engine" admission: the whole share goes to the engine at once


class OffPolicyError(RuntimeError):
    """A rollout used weights other than the ones the trainer last pushed."""


# Room past the longest request for a full draft (ours). A speculating engine drafts only while
# the batch's longest sequence plus ``num_speculative_tokens`` fits ``max_model_len``; beyond it
# vLLM 0.32 hands the scheduler drafts of token 0 instead of none ("not input_fits_in_drafter" in
# its model runner), which are verified and rejected: every request that ran to ``max_tokens``
# paid a draft step at each of its last steps. KV is held for real tokens only, so the room
# costs nothing. At least RolloutInstance's ``gamma_max`` (8); none where the model's context binds.
DRAFT_ROOM = 16


@dataclass(frozen=True)
class RolloutShape:
    """What every iteration's rollout looks like: ``group_size`` responses per prompt of up to
    ``max_tokens`` tokens at ``temperature``; engines of ``max_model_len`` tokens running at most
    ``max_num_seqs`` sequences; the policy runs at most ``capacity`` requests per instance."""

    group_size: int
    max_tokens: int
    temperature: float
    max_model_len: int
    max_num_seqs: int
    capacity: int
    kv_cache_gib: int

    @classmethod
    def fit(cls, model_path: str, context_length: int, longest_prompt: int, group_size: int, max_tokens: int,
            temperature: float, kv_cache_gib: int, max_num_seqs: int) -> "RolloutShape":
        """The shape for prompts of at most ``longest_prompt`` tokens: engines long enough for
        the longest prompt plus ``max_tokens`` plus :data:`DRAFT_ROOM` (within the model's
        context), and a capacity that fits that many worst-case requests (prompt plus
        ``max_tokens``) into the KV budget (so vLLM never preempts)."""
        longest = min(context_length, longest_prompt + max_tokens)
        cap = concurrency_cap(model_path, kv_cache_gib, longest, max_num_seqs)
        max_len = min(context_length, longest + DRAFT_ROOM)
        return cls(group_size, max_tokens, temperature, max_len, max_num_seqs, cap, kv_cache_gib)


class RolloutManager:
    """Rollout instances (vLLM engines in Ray actors) driven by a policy.

    ``policy_version`` is the weights version the instances hold (set by the weight sync);
    ``policy`` may be replaced between rollouts (the benchmark runs several on the same engines).
    """

    def __init__(self, pool: InstancePool, shape: RolloutShape, draft_server=None, speculation: str | None = None):
        self.pool = pool
        self.shape = shape
        self.draft_server = draft_server
        self.speculation = "grouped" if draft_server is not None and speculation is None else speculation
        self.spec_history = True  # grouped drafts also from earlier rollouts' responses to the same prompt
        self.history_key = ""  # which of the draft server's histories (the benchmark keeps one per policy)
        self.policy = None
        self.policy_version = 0
        self._notes: list[str] = []  # for the next batch's events
        self._engine_step = None  # the engines' decode step time, timed once when a policy needs it

    @classmethod
    def start(cls, model_path: str, instances: int, shape: RolloutShape, seed: int,
              speculation: str | None = None) -> "RolloutManager":
        """Start ``instances`` engines of ``shape`` on the Ray cluster running ``speculation``
        (None, or a method of ``umbra.rollout.instance.SPECULATION``; "grouped" also starts the
        draft server they draft from); returns once every engine is up.

        Raises ``ray.exceptions.RayActorError`` when an engine cannot start.
        """
        from umbra.rollout.instance import GROUPED, start_instances
        from umbra.speculative.server import start_draft_server

        server = start_draft_server() if speculation in GROUPED else None
        pool = InstancePool.started(instances, lambda n, first_id: start_instances(
            n, model_path, shape.max_model_len, shape.max_num_seqs, seed, shape.kv_cache_gib, server,
            first_id=first_id, speculation=speculation))
        return cls(pool, shape, server, speculation)

    @property
    def instances(self) -> list:
        """The instances' actor handles by index (a replacement takes its predecessor's index)."""
        return self.pool.handles

    def kv_block_tokens(self) -> int:
        """The engines' KV block size in tokens (chunk ends align to it)."""
        import ray

        return int(ray.get(self.instances[0].ready.remote())["kv_block_tokens"])

    def kv_budget(self) -> KVBudget:
        """The instances' KV caches as a policy's ledger sees them: each engine's own block
        count (``ready()``), less ``KV_HEADROOM``; with speculation every running sequence
        also holds ``SPEC_LOOKAHEAD`` slots."""
        import ray

        infos = ray.get([h.ready.remote() for h in self.instances])
        block = int(infos[0]["kv_block_tokens"])
        tokens = [int(i["kv_cache_tokens"] * (1 - KV_HEADROOM)) // block * block for i in infos]
        return KVBudget(tokens, block, SPEC_LOOKAHEAD if self.speculation is not None else 0)

    def limits(self, policy, shape: RolloutShape) -> tuple[list[int], KVBudget | None]:
        """``(capacities, kv)`` for ``policy.reset`` by its admission rule (``Policy.admission``):
        the worst-case cap; the engines' sequence limit plus their KV budget; or no limit at all
        (the engine's scheduler decides, veRL's way)."""
        n = len(self.instances)
        if policy.admission == "engine":
            return [UNLIMITED] * n, None
        if policy.admission == "kv":
            return [shape.max_num_seqs] * n, self.kv_budget()
        return [shape.capacity] * n, None

    def engine_step(self):
        """Seconds of one decode step of a batch on these engines (``step_probe.measure``, timed
        once: 15-25 s on this machine's CPU engines at an engine length of 675 tokens)."""
        if self._engine_step is None:
            from umbra.rollout.step_probe import measure

            kv = self.kv_budget()
            self._engine_step = measure(self.instances, self.shape.max_model_len, self.shape.max_num_seqs,
                                        min(kv.tokens), kv.block_tokens)
            log.info("engine step time: %.1f ms + %.2f ms per sequence", 1000 * self._engine_step.c0,
                     1000 * self._engine_step.c_row)
        return self._engine_step

    def replace_dead_instances(self, iteration: int) -> list[int]:
        """Replace every instance that does not answer a liveness probe; returns their indices
        (they hold the initial weights until the caller syncs them)."""
        dead = self.pool.dead()
        for i in dead:
            self._notes.append(self.pool.replace(i, f"did not answer before iteration {iteration}"))
        return dead

    def generate(self, iteration: int, prompts: list[list[int]], seed: int, policy=None,
                 shape: RolloutShape | None = None) -> RolloutBatch:
        """Sample ``shape.group_size`` responses to each prompt (token ids) under ``policy``
        (default: ``self.policy``), with sampling seeds derived from ``seed``; ``shape`` may
        shrink the group size or ``max_tokens`` for one call (the benchmark's warm-up).

        An instance that dies mid-rollout loses only its running chunks (they run elsewhere)
        and is replaced afterwards; its replacement holds the initial weights until the next
        weight sync. Raises OffPolicyError if any response was sampled
        with weights other than ``policy_version``; RuntimeError if every instance died.
        """
        policy, s = policy or self.policy, shape or self.shape
        groups = make_groups(prompts, s.group_size, s.max_tokens, seed, s.temperature)
        if getattr(policy, "needs_engine_step", False):  # before the rollout's clock and counters start
            policy.engine_step = self.engine_step()
        before = self.pool.counters()
        capacities, kv = self.limits(policy, s)
        requests, start, end = run_rollout(policy, self.instances, groups, capacities, self.draft_server, kv,
                                           self.policy_version, self.spec_history, self.history_key)
        notes, self._notes = self._notes, []
        for i in policy.lost_instances:
            before[i] = dict.fromkeys(before[i], 0.0)  # its replacement counts from 0
            notes.append(self.pool.replace(i, f"died during the rollout of iteration {iteration}; its running "
                                              "chunks were re-dispatched to the other instances"))
        batch = RolloutBatch(iteration, s.group_size, [Sample.of(r) for r in requests], requests, start, end,
                             events=notes)
        stale = batch.policy_versions() - {self.policy_version}
        if stale:
            raise OffPolicyError(f"iteration {iteration}: rollout used policy versions {stale}, "
                                 f"the trainer pushed {self.policy_version}")
        batch.metrics = rollout_metrics(requests, start, end, len(self.instances))
        batch.metrics.update(policy_counters(policy))
        batch.metrics.update(engine_metrics(before, self.pool.counters()))
        if self.draft_server is not None:
            batch.metrics.update(self.draft_metrics())
        batch.trace = request_records(requests, start)
        batch.trace_meta = {"policy": policy.name, "instances": len(self.instances), "capacity": s.capacity,
                            "admission": policy.admission, "kv_cache_gib": s.kv_cache_gib,
                            "max_tokens": s.max_tokens}
        return batch

    def draft_metrics(self) -> dict[str, float]:
        """The draft server's history: ``rollout/spec/history_mb`` (tokens held),
        ``rollout/spec/history_prompts`` and ``rollout/spec/seeded_groups`` (groups of this
        rollout that started with earlier responses to their prompt); and Alg. 1's view on the
        engines: ``rollout/spec/drafting_steps_frac`` and its step-cost fit ``rollout/spec/step_cost_ms``
        + ``row_cost_ms`` per row + ``context_cost_us`` per context token + ``draft_cost_ms`` per verified
        draft token."""
        import ray

        s = ray.get(self.draft_server.stats.remote())
        out = {"rollout/spec/history_mb": float(s["history_mb"]),
               "rollout/spec/history_prompts": float(s["history_prompts"]),
               "rollout/spec/seeded_groups": float(s["seeded_groups"])}
        counters = [c for c in ray.get([i.draft_counters.remote() for i in self.instances]) if c]
        if counters:  # Alg. 1: how often it drafted, and the step cost it saw (mean over instances)
            steps = sum(c["steps"] for c in counters)
            out["rollout/spec/drafting_steps_frac"] = sum(c["drafting_steps"] for c in counters) / steps if steps else 0.0
            for key, name, scale in (("c0_s", "step_cost_ms", 1e3), ("row_s", "row_cost_ms", 1e3),
                                     ("context_token_s", "context_cost_us", 1e6), ("draft_s", "draft_cost_ms", 1e3)):
                out[f"rollout/spec/{name}"] = scale * sum(c[key] for c in counters) / len(counters)
        return out

    def load_weights(self, source, version: int, only: list[int] | None = None) -> list:
        """Ask instances (all, or the indices ``only``) to load ``source`` (a shared-memory
        file path or safetensors bytes); returns each one's answer (None: path not on its node).
        Called by the weight sync, which then sets ``policy_version``. An instance that died
        since the rollout (ours: between its last chunk and this sync, while the trainer ran) is
        replaced, and the replacement loads ``source``, as one that dies between iterations."""
        import ray
        from ray.exceptions import RayActorError

        indices = list(range(len(self.instances)) if only is None else only)
        refs = [self.instances[i].load_weights.remote(source, version) for i in indices]
        answers = []
        for i, ref in zip(indices, refs):
            try:
                answers.append(ray.get(ref))
            except RayActorError:
                self._notes.append(self.pool.replace(i, f"died before the weight sync of policy version {version}"))
                answers.append(ray.get(self.instances[i].load_weights.remote(source, version)))
        return answers

    def shutdown(self) -> None:
        """Stop every engine (best effort: a dead actor must not hide the error that ended the run)."""
        import ray

        for ref in [inst.shutdown.remote() for inst in self.instances]:
            try:
                ray.get(ref, timeout=60)
            except Exception as exc:  # noqa: BLE001
                log.warning("instance shutdown failed: %s", exc)
