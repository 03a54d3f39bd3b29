"""Requests and groups as plain data (the field's vocabulary: group, request, chunk)."""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


class RequestStatus(str, Enum):
    """Where a request stands; the finished values are vLLM's finish reasons, as traces store them."""

    PENDING = "pending"    # not finished: waiting for its next chunk, or running one
    COMPLETED = "stop"     # ended at EOS
    CLIPPED = "length"     # cut at max_tokens (counted in rollout/clip_ratio)


@dataclass(slots=True)
class ChunkRecord:
    """One chunk a request ran: on ``instance`` from ``start_s`` to ``finish_s``, ``tokens``
    generated, ``prefill`` context tokens the engine computed (not served from its prefix cache)."""

    instance: int
    start_s: float
    finish_s: float
    tokens: int
    prefill: int = 0


class SchedulableRequest:
    """The interface policies and metrics schedule and measure by: derived from ``group_id``,
    ``index``, ``max_tokens``, ``num_generated``, ``chunks`` and ``status``; shared by the real
    :class:`Request` and the simulator's token-free ``SimRequest``."""

    __slots__ = ()

    @property
    def done(self) -> bool:
        """True once the request finished (EOS or ``max_tokens``)."""
        return self.status is not RequestStatus.PENDING

    @property
    def finish_reason(self) -> str | None:
        """``"stop"`` (EOS) or ``"length"`` (clipped) once finished, else None."""
        return None if self.status is RequestStatus.PENDING else self.status.value

    @property
    def request_id(self) -> str:
        return f"g{self.group_id}-r{self.index}"

    @property
    def remaining(self) -> int:
        """Tokens this request may still generate."""
        return self.max_tokens - self.num_generated

    @property
    def last_instance(self) -> int | None:
        """Instance of the latest chunk (cache affinity), or None before the first."""
        return self.chunks[-1].instance if self.chunks else None

    @property
    def clipped(self) -> bool:
        """True when the response was cut at ``max_tokens``."""
        return self.status is RequestStatus.CLIPPED


@dataclass
class Request(SchedulableRequest):
    """One response being generated for group ``group_id``.

    Times are wall-clock seconds (``time.time()``) recorded by the instance that
    ran the request; ``policy_version`` is the weights version that sampled it.
    """

    group_id: int
    index: int
    prompt_token_ids: list[int]
    max_tokens: int
    seed: int
    temperature: float = 1.0
    output_token_ids: list[int] = field(default_factory=list)
    instance: int | None = None
    start_s: float | None = None
    finish_s: float | None = None
    status: RequestStatus = RequestStatus.PENDING
    policy_version: int | None = None
    chunks: list[ChunkRecord] = field(default_factory=list)

    @property
    def num_generated(self) -> int:
        """Output tokens so far (policies and metrics read lengths only, so the simulator's
        token-free requests can stand in for this class)."""
        return len(self.output_token_ids)

    @property
    def prompt_len(self) -> int:
        """Prompt tokens."""
        return len(self.prompt_token_ids)

    def chunk_seed(self) -> int:
        """Sampling seed of the next chunk: a fresh stream per chunk, so chunking keeps
        sampling i.i.d. per token (the same distribution as one long request)."""
        return (self.seed * 1_000_003 + len(self.output_token_ids)) % (2**31 - 1)

    def add_chunk(self, instance: int, tokens: list[int], finish_reason: str, start_s: float,
                  finish_s: float, prefill_tokens: int = 0) -> None:
        """Append one chunk's tokens and timing; marks the request done at EOS or ``max_tokens``.
        ``prefill_tokens``: context tokens the engine computed for this chunk (not served
        from its prefix cache).

        Raises ValueError if the chunk would exceed ``max_tokens`` (a chunk-bound violation).
        """
        if len(tokens) > self.remaining:
            raise ValueError(f"{self.request_id}: chunk of {len(tokens)} tokens exceeds remaining {self.remaining}")
        self.output_token_ids.extend(tokens)
        self.chunks.append(ChunkRecord(instance, start_s, finish_s, len(tokens), prefill_tokens))
        if self.start_s is None:
            self.start_s = start_s
        self.instance = instance
        if finish_reason == "stop" or self.remaining == 0:
            self.finish_s = finish_s
            self.status = RequestStatus.COMPLETED if finish_reason == "stop" else RequestStatus.CLIPPED


def make_groups(prompts: list[list[int]], group_size: int, max_tokens: int, seed: int,
                temperature: float = 1.0) -> list[list[Request]]:
    """``len(prompts)`` groups of ``group_size`` requests each; every request gets
    its own sampling seed derived from ``seed`` so a rollout is reproducible."""
    return [
        [Request(group_id=g, index=i, prompt_token_ids=list(p), max_tokens=max_tokens,
                 seed=(seed * 1_000_003 + g * 1009 + i) % (2**31 - 1), temperature=temperature)
         for i in range(group_size)]
        for g, p in enumerate(prompts)
    ]
