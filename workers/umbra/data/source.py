"""The data source (slime's "data" part): which prompts each iteration gets.

Prompts are drawn uniformly with replacement from the run's pool (every problem whose
chat-formatted prompt fits the prompt budget), from a seeded generator whose state a
checkpoint saves and Resume restores, so a resumed run draws what it would have drawn.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

from umbra.data.problem import Problem
from umbra.data.prompts import encode_prompts
from umbra.data.registry import load_problems


@dataclass(frozen=True)
class PromptItem:
    """One prompt of the pool: the problem (for the reward) and its token ids (for the engines)."""

    problem: Problem
    token_ids: list[int]


def prompt_pool(problems: list[Problem], tokenizer, prompt_budget: int) -> list[PromptItem]:
    """Each problem with its chat-formatted prompt ids, leaving out prompts over ``prompt_budget`` tokens."""
    return [PromptItem(p, ids) for p, ids in zip(problems, encode_prompts(tokenizer, problems))
            if len(ids) <= prompt_budget]


class DataSource:
    """``batch_size`` prompts per :meth:`next_batch` out of ``items``, seeded by ``seed``.

    Raises ValueError for an empty pool.
    """

    def __init__(self, items: list[PromptItem], batch_size: int, seed: int):
        if not items:
            raise ValueError("the data source has no prompts")
        self.items, self.batch_size = items, batch_size
        self._rng = random.Random(seed)

    @classmethod
    def from_dataset(cls, dataset: str, tokenizer, prompt_budget: int, batch_size: int,
                     seed: int) -> "DataSource":
        """The pool of data set ``dataset`` (see ``umbra.data.registry``), prompts chat-formatted
        by ``tokenizer``; problems whose prompt exceeds ``prompt_budget`` tokens are left out.

        Raises ValueError (or DatasetError) when nothing usable is there.
        """
        return cls.from_problems(load_problems(dataset, seed), tokenizer, prompt_budget, batch_size, seed, dataset)

    @classmethod
    def from_problems(cls, problems: list[Problem], tokenizer, prompt_budget: int, batch_size: int, seed: int,
                      name: str = "the data set") -> "DataSource":
        """The pool of ``problems`` (see :func:`prompt_pool`). Raises ValueError for an empty pool."""
        pool = prompt_pool(problems, tokenizer, prompt_budget)
        if not pool:
            raise ValueError(f"every prompt of {name} is longer than {prompt_budget} tokens")
        return cls(pool, batch_size, seed)

    @property
    def longest_prompt(self) -> int:
        """Tokens of the pool's longest prompt (sizes the engines)."""
        return max(len(item.token_ids) for item in self.items)

    def next_batch(self) -> list[PromptItem]:
        """The next iteration's prompts (with replacement)."""
        return [self.items[self._rng.randrange(len(self.items))] for _ in range(self.batch_size)]

    def state(self) -> list:
        """The sampler's state as JSON-able lists (what a checkpoint stores)."""
        version, internal, gauss = self._rng.getstate()
        return [version, list(internal), gauss]

    def restore(self, state: list) -> None:
        """Continue from a :meth:`state` saved earlier."""
        version, internal, gauss = state
        self._rng.setstate((version, tuple(internal), gauss))
