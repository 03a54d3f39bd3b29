"""Requests and groups as plain data (DESIGN.md vocabulary)."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Request:
    """One response being generated for group ``group_id``.

    Times are wall-clock seconds (``time.time()``) recorded by the instance that
    ran the request; ``policy_version`` is the weights version that sampled it.
    """

    group_id: int
    index: int
    prompt_token_ids: list[int]
    max_tokens: int
    seed: int
    output_token_ids: list[int] = field(default_factory=list)
    instance: int | None = None
    start_s: float | None = None
    finish_s: float | None = None
    finish_reason: str | None = None
    policy_version: int | None = None

    @property
    def request_id(self) -> str:
        return f"g{self.group_id}-r{self.index}"

    @property
    def clipped(self) -> bool:
        """True when the response was cut at ``max_tokens``."""
        return self.finish_reason == "length"


def make_groups(prompts: list[list[int]], group_size: int, max_tokens: int, seed: int) -> list[list[Request]]:
    """``len(prompts)`` groups of ``group_size`` requests each; every request gets
    its own sampling seed derived from ``seed`` so a rollout is reproducible."""
    return [
        [Request(group_id=g, index=i, prompt_token_ids=list(p), max_tokens=max_tokens,
                 seed=(seed * 1_000_003 + g * 1009 + i) % (2**31 - 1))
         for i in range(group_size)]
        for g, p in enumerate(prompts)
    ]
