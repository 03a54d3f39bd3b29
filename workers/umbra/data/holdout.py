"""A run's training and validation problems: the validation set is its own data set
(``val_dataset``) or a share of the training file held out (``val_fraction``, fixed by the
seed, so a resumed run holds out the same rows)."""
from __future__ import annotations

import random

from umbra.data.problem import Problem
from umbra.data.registry import VAL_ARITH_SEED_OFFSET, load_problems


def hold_out(problems: list[Problem], fraction: float, seed: int) -> tuple[list[Problem], list[Problem]]:
    """``(train, val)``: ``round(fraction * n)`` problems (at least one, and one left to train
    on) drawn by ``random.Random(seed)``; both keep the file's order.

    Raises ValueError for fewer than two problems.
    """
    if fraction <= 0:
        return list(problems), []
    n = len(problems)
    if n < 2:
        raise ValueError(f"val_fraction needs at least 2 problems in the data set, it has {n}")
    k = min(max(1, round(fraction * n)), n - 1)
    held = set(random.Random(seed).sample(range(n), k))
    return ([p for i, p in enumerate(problems) if i not in held],
            [p for i, p in enumerate(problems) if i in held])


def train_and_val(dataset: str, seed: int, val_dataset: str = "", val_fraction: float = 0.0
                  ) -> tuple[list[Problem], list[Problem]]:
    """The training problems and the validation problems (empty without a validation set).

    Raises DatasetError / ValueError for unusable data.
    """
    problems = load_problems(dataset, seed)
    if val_dataset:
        return problems, load_problems(val_dataset, seed + VAL_ARITH_SEED_OFFSET)
    return hold_out(problems, val_fraction, seed)
