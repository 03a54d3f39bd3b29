"""The ``math`` reward: the final answer (``umbra.rewards.extract``) checked with math-verify
(Hugging Face), not a regex of our own."""
from __future__ import annotations

from math_verify import parse, verify

from umbra.rewards.extract import final_answer


def math_reward(response: str, answer: str) -> float:
    """1.0 when ``response``'s final answer equals ``answer`` mathematically, else 0.0.

    Never raises: no final answer or unparsable text scores 0.0. Call from a main thread:
    math-verify bounds parsing time with a signal alarm (the reward pool's workers do).
    """
    found = final_answer(response, numeric=True)
    if found is None:
        return 0.0
    try:
        gold = parse(answer)
        pred = parse(found.replace("**", "").replace("$", " "))
        return 1.0 if pred and verify(gold, pred) else 0.0
    except Exception:  # math-verify may raise on odd input; a bad answer is simply wrong
        return 0.0
