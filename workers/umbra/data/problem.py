"""The unit of input: one question with its reference final answer."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """A question and the final answer a response must reach (a string, e.g. ``"72"``)."""

    question: str
    answer: str
