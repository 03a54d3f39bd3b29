"""The offline default data set: generated two-step arithmetic word problems."""
from __future__ import annotations

import random

from umbra.data.problem import Problem

_NAMES = ["Ana", "Ben", "Chen", "Dara", "Eli", "Fay", "Gus", "Hana"]
_ITEMS = ["apples", "books", "coins", "marbles", "pencils", "stamps"]


def generate(n: int = 512, seed: int = 0) -> list[Problem]:
    """``n`` problems, the same for the same ``seed``; answers are integers."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        name, item = rng.choice(_NAMES), rng.choice(_ITEMS)
        a, b, c = rng.randint(2, 60), rng.randint(2, 40), rng.randint(1, 20)
        q = (f"{name} has {a} {item}. {name} buys {b} more and then gives away {c}. "
             f"How many {item} does {name} have now?")
        out.append(Problem(question=q, answer=str(a + b - c)))
    return out
