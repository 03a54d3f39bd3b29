"""What one rollout hands to the rest of the RL loop: a typed batch of samples.

A sample is a finished request with slots for the reward and the GRPO advantage, which the
loop fills after the rollout; the batch also carries the rollout's metrics, its per-request
trace (for the dashboard and ``umbra sim``) and the notes for the run's event log.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from umbra.rollout.request import ChunkRecord, Request, RequestStatus


@dataclass
class Sample:
    """Response ``index`` of group ``group_id``: its tokens, how it ended, the policy version
    (weights) that sampled it and the chunks it ran; ``reward`` and ``advantage`` are set later."""

    group_id: int
    index: int
    prompt_token_ids: list[int]
    response_token_ids: list[int]
    status: RequestStatus
    policy_version: int | None
    chunks: list[ChunkRecord]
    reward: float | None = None
    advantage: float | None = None

    @classmethod
    def of(cls, r: Request) -> "Sample":
        """The sample of finished request ``r``. Raises ValueError if it has not finished."""
        if not r.done:
            raise ValueError(f"{r.request_id} has not finished")
        return cls(r.group_id, r.index, r.prompt_token_ids, r.output_token_ids, r.status, r.policy_version,
                   r.chunks)


@dataclass
class RolloutBatch:
    """The samples of one iteration's rollout in group order (``group_size`` per group).

    ``requests`` are the finished requests the samples came from (the metric and trace
    functions read them); ``start_s``/``end_s`` wall-clock seconds of the rollout.
    """

    iteration: int
    group_size: int
    samples: list[Sample]
    requests: list[Request]
    start_s: float
    end_s: float
    metrics: dict[str, float] = field(default_factory=dict)
    trace: list[dict] = field(default_factory=list)
    trace_meta: dict = field(default_factory=dict)
    events: list[str] = field(default_factory=list)

    @property
    def num_groups(self) -> int:
        return len(self.samples) // self.group_size

    def policy_versions(self) -> set[int | None]:
        """The weight versions that sampled this batch (one in synchronous RL)."""
        return {s.policy_version for s in self.samples}
