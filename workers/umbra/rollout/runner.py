"""Drive one rollout on real instances: a policy's chunks executed on the vLLM actors."""
from __future__ import annotations

import time

from umbra.rollout.request import Request


def run_rollout(policy, instances: list, groups: list[list[Request]], capacities: list[int],
                draft_server=None) -> tuple[list[Request], float, float]:
    """Run every request of ``groups`` to completion as ``policy`` dispatches its chunks.

    ``capacities[i]``: most concurrent requests on instance ``i``. With ``draft_server``
    (grouped speculative decoding) each finished chunk's tokens feed its group's structure.
    Returns ``(finished requests in group order, start_s, end_s)``.
    Raises ``ray.exceptions.RayError`` when an instance fails, RuntimeError when the
    policy stalls (nothing running, nothing dispatched, requests left).
    """
    import ray

    policy.reset(groups, capacities)
    if draft_server is not None:
        ray.get([draft_server.reset.remote()] + [inst.reset_drafts.remote() for inst in instances])
    start = time.time()
    pending: dict = {}
    while True:
        for d in policy.next_dispatches():
            r = d.request
            ref = instances[d.instance].generate_chunk.remote(
                r.request_id, r.group_id, r.prompt_token_ids, r.output_token_ids, d.max_tokens, r.chunk_seed(),
                r.temperature)
            pending[ref] = (r, d.instance)
        if not pending:
            if policy.finished:
                break
            raise RuntimeError(f"policy {policy.name} stalled with {policy.outstanding} requests left")
        ready, _ = ray.wait(list(pending), num_returns=1)
        for ref in ready:
            r, inst = pending.pop(ref)
            out = ray.get(ref)
            r.policy_version = out["policy_version"]
            r.add_chunk(inst, out["tokens"], out["finish_reason"], out["start_s"], out["finish_s"],
                        out.get("prefill_tokens", 0))
            if draft_server is not None:  # every response feeds its group's suffix structure
                draft_server.append.remote(r.group_id, r.request_id, out["tokens"])
            policy.on_chunk_done(r, inst)
    end = time.time()
    done = [r for g in groups for r in g]
    return done, start, end
