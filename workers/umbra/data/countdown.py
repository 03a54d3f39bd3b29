"""A generated task for custom rewards: Countdown (reach a target from given numbers with
+ - * /), in the shape TinyZero and veRL's countdown example use: ``extra_info`` holds
``numbers`` and ``target``; the response ends with ``<answer>equation</answer>``. Scored by
``examples/rewards/countdown.py``."""
from __future__ import annotations

import random

from umbra.data.problem import Problem

PROMPT = ("Using the numbers {numbers}, create an equation that equals {target}. Use each number "
          "exactly once, with + - * / and parentheses. Show your work, then give the equation in "
          "<answer> </answer> tags, for example <answer>(1 + 2) * 3</answer>.")


def _target(rng: random.Random, numbers: list[int]) -> int | None:
    """A positive integer reached by combining ``numbers`` in a random order with random operations."""
    order = rng.sample(numbers, len(numbers))
    value = order[0]
    for n in order[1:]:
        op = rng.choice("+-*/")
        if op == "/" and (n == 0 or value % n):
            op = "+"
        value = {"+": value + n, "-": value - n, "*": value * n, "/": value // n if n else value}[op]
    return value if 0 < value <= 1000 else None


def generate(n: int = 512, seed: int = 0, count: int = 3) -> list[Problem]:
    """``n`` problems of ``count`` numbers in 1..20, the same for the same ``seed``; each target is reachable."""
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        numbers = [rng.randint(1, 20) for _ in range(count)]
        target = _target(rng, numbers)
        if target is None:
            continue
        out.append(Problem(question=PROMPT.format(numbers=numbers, target=target), answer=str(target),
                           data_source="countdown", extra_info={"numbers": numbers, "target": target}))
    return out
