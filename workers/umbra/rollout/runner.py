"""Drive one rollout on real instances: a policy's chunks executed on the vLLM actors."""
from __future__ import annotations

import logging
import time

from umbra.rollout.request import Request

log = logging.getLogger(__name__)


def run_rollout(policy, instances: list, groups: list[list[Request]], capacities: list[int],
                draft_server=None, kv=None, policy_version: int = 0, use_history: bool = True,
                history_key: str = "") -> tuple[list[Request], float, float]:
    """Run every request of ``groups`` to completion as ``policy`` dispatches its chunks.

    ``capacities[i]``: most concurrent requests on instance ``i``; ``kv``: the instances' KV
    budget for a policy that admits by KV (see ``Policy.admission``). With ``draft_server``
    (grouped speculative decoding) each finished chunk's tokens feed its group's structure,
    which starts, with ``use_history``, with the server's remembered responses to its prompt
    (``DraftServer.begin``: ``policy_version`` is the weights this rollout samples with,
    ``history_key`` which history it reads and feeds).
    Returns ``(finished requests in group order, start_s, end_s)``.

    An instance that dies (its actor is gone) loses only its running chunks: they go back
    to the policy and run on the other instances (divided rollout makes this cheap), and
    its index is appended to ``policy.lost_instances`` for the caller to replace it.
    Raises RuntimeError when every instance is lost or the policy stalls (nothing
    running, nothing dispatched, requests left); other Ray errors propagate.
    """
    import ray
    from ray.exceptions import ActorUnavailableError, RayActorError

    policy.reset(groups, capacities, kv)
    if draft_server is not None:
        prompts = {g[0].group_id: g[0].prompt_token_ids for g in groups if g}
        ray.get([draft_server.begin.remote(prompts, policy_version, use_history, history_key)]
                + [inst.reset_drafts.remote() for inst in instances])
    start = time.time()
    pending: dict = {}
    while True:
        for d in policy.next_dispatches():
            r = d.request
            # a ledger's chunks tell the engine what to keep cached (umbra.rollout.ledger_scheduler)
            kv = None if d.kv_resident is None else {"final": d.max_tokens >= r.remaining, "release": list(d.kv_release)}
            ref = instances[d.instance].generate_chunk.remote(
                r.request_id, r.group_id, r.prompt_token_ids, r.output_token_ids, d.max_tokens, r.chunk_seed(),
                r.temperature, kv=kv)
            pending[ref] = (r, d.instance)
        if not pending:
            if policy.finished:
                break
            raise RuntimeError(f"policy {policy.name} stalled with {policy.outstanding} requests left")
        ready, _ = ray.wait(list(pending), num_returns=1)
        for ref in ready:
            r, inst = pending.pop(ref)
            try:
                out = ray.get(ref)
            except (RayActorError, ActorUnavailableError) as exc:
                lost = [r] + [pending.pop(k)[0] for k in [k for k, (_, i) in pending.items() if i == inst]]
                log.warning("rollout instance %d died (%s); re-dispatching its %d running chunks",
                            inst, type(exc).__name__, len(lost))
                policy.on_instance_lost(inst, lost)
                continue
            r.policy_version = out["policy_version"]
            r.add_chunk(inst, out["tokens"], out["finish_reason"], out["start_s"], out["finish_s"],
                        out.get("prefill_tokens", 0))
            if draft_server is not None:  # every response feeds its group's suffix structure
                draft_server.append.remote(r.group_id, r.request_id, out["tokens"])
            policy.on_chunk_done(r, inst)
    end = time.time()
    done = [r for g in groups for r in g]
    return done, start, end
