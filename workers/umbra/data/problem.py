"""The unit of input: one prompt with what its reward function needs to score a response."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Problem:
    """One training or validation prompt.

    ``question``: a plain prompt (text), or ``messages`` (chat messages, veRL/TRL shape),
    which then win; ``answer``: the reference (veRL's ``reward_model.ground_truth``);
    ``data_source``: veRL's ``data_source`` (selects a reward in veRL's default scorer);
    ``extra_info``: every other per-row field handed to the reward function (veRL's
    ``extra_info``; for TRL-shaped rows, the other columns).
    """

    question: str
    answer: str
    data_source: str = ""
    messages: tuple = ()
    extra_info: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
