"""Answer checking with math-verify (Hugging Face), not a regex of our own."""
from __future__ import annotations

from math_verify import parse, verify


def extract_final(response: str) -> str:
    """The text after the last ``####`` if present (GSM8K convention), else the whole response."""
    return response.rsplit("####", 1)[1] if "####" in response else response


def math_reward(response: str, answer: str) -> float:
    """1.0 when ``response``'s final answer equals ``answer`` mathematically, else 0.0.

    Never raises: unparsable text scores 0.0. Call from the main thread:
    math-verify bounds parsing time with a signal alarm.
    """
    try:
        gold = parse(answer)
        pred = parse(extract_final(response))
        return 1.0 if pred and verify(gold, pred) else 0.0
    except Exception:  # math-verify may raise on odd input; a bad answer is simply wrong
        return 0.0
