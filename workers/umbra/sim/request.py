"""A token-free request for the simulator: the lengths and timings of a real
``rollout.request.Request`` without its token lists, so the very same policy objects and
metric functions run on it (they read ``num_generated``, ``prompt_len``, ``remaining``...)."""
from __future__ import annotations

from umbra.rollout.request import ChunkRecord, RequestStatus, SchedulableRequest


class SimRequest(SchedulableRequest):
    """One response of group ``group_id`` whose true output length is ``output_len``
    (known to the simulator only; policies see what a real request would show).

    Times are simulated seconds from the rollout start.
    """

    __slots__ = ("group_id", "index", "prompt_len", "output_len", "max_tokens", "num_generated", "chunks",
                 "start_s", "finish_s", "status", "instance", "policy_version")

    def __init__(self, group_id: int, index: int, prompt_len: int, output_len: int, max_tokens: int):
        if output_len < 1 or prompt_len < 1 or max_tokens < 1:
            raise ValueError("prompt_len, output_len and max_tokens must be >= 1")
        self.group_id, self.index = group_id, index
        self.prompt_len, self.max_tokens = prompt_len, max_tokens
        self.output_len = min(output_len, max_tokens)
        self.num_generated = 0
        self.chunks: list[ChunkRecord] = []
        self.start_s = self.finish_s = self.instance = None
        self.status = RequestStatus.PENDING
        self.policy_version = None  # simulated: no weights

    def tokens_this_chunk(self, budget: int) -> int:
        """Tokens a chunk of at most ``budget`` tokens generates (it stops early at EOS)."""
        return min(budget, self.output_len - self.num_generated)

    def add_chunk(self, instance: int, tokens: int, start_s: float, finish_s: float, prefill: int) -> None:
        """Record a finished chunk of ``tokens`` tokens; marks the request done at its true
        length. Raises ValueError past ``max_tokens`` (a chunk-bound violation)."""
        if tokens > self.remaining or tokens < 0:
            raise ValueError(f"{self.request_id}: chunk of {tokens} tokens, {self.remaining} remaining")
        self.num_generated += tokens
        self.chunks.append(ChunkRecord(instance, start_s, finish_s, tokens, prefill))
        if self.start_s is None:
            self.start_s = start_s
        self.instance = instance
        if self.num_generated >= self.output_len:
            self.finish_s = finish_s
            self.status = RequestStatus.CLIPPED if self.num_generated >= self.max_tokens else RequestStatus.COMPLETED
