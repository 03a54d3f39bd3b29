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


def generate_easy(n: int = 512, seed: int = 0, high: int = 9) -> list[Problem]:
    """``arith-easy`` (ours): one-step word problems (add or take away two numbers in
    2..``high``). A task SmolLM2-135M can learn on a CPU within an hour of GRPO: greedy it
    answers about 1 in 5 right in the ``#### <number>`` form, so groups carry a signal from
    the first iteration (two-step ``arith`` starts near 0)."""
    rng = random.Random(seed)
    out, seen = [], set()
    while len(out) < n:  # distinct questions, so that a held-out share is held out (4,000+ exist)
        name, item = rng.choice(_NAMES), rng.choice(_ITEMS)
        a, b = rng.randint(2, high), rng.randint(2, high)
        if rng.random() < 0.5:
            q, answer = f"{name} has {a} {item} and buys {b} more. How many {item} does {name} have now?", a + b
        else:
            a, b = max(a, b), min(a, b)
            q, answer = f"{name} has {a} {item} and gives away {b}. How many {item} does {name} have now?", a - b
        if q not in seen:
            seen.add(q)
            out.append(Problem(question=q, answer=str(answer)))
    return out
