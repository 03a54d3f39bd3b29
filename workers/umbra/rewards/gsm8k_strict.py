"""The ``gsm8k-strict`` reward: veRL's strict GSM8K rule (``verl/utils/reward_score/gsm8k.py``,
``method="strict"``), reimplemented so scores are comparable to veRL's.

veRL looks only at the last 300 characters, takes the last ``#### <number>`` (a number being
``-?[0-9.,]+`` right after ``#### `` with one space), drops ``,`` and ``$``, and scores 1.0
when that string equals the ground truth exactly, else 0.0 (``format_score``); no match is 0.
"""
from __future__ import annotations

import re

CLIP_CHARS = 300  # veRL's _SOLUTION_CLIP_CHARS
_STRICT = re.compile(r"#### (-?[0-9.,]+)")


def strict_answer(response: str) -> str | None:
    """veRL's strict extraction: the last ``#### <number>`` in the last 300 characters, or None."""
    found = _STRICT.findall(response[-CLIP_CHARS:])
    return found[-1].replace(",", "").replace("$", "") if found else None


def gsm8k_strict_reward(response: str, answer: str) -> float:
    """1.0 when veRL's strict answer equals ``answer`` as a string, else 0.0."""
    found = strict_answer(response)
    return 1.0 if found is not None and found == answer else 0.0
