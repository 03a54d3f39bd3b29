"""The data source: seeded draws with replacement, and a state that continues exactly."""
import pytest

from umbra.data.problem import Problem
from umbra.data.source import DataSource, PromptItem

ITEMS = [PromptItem(Problem(f"q{i}", str(i)), [i] * (i + 1)) for i in range(10)]


def test_batches_are_seeded_and_drawn_from_the_pool():
    a, b = DataSource(ITEMS, 4, seed=3), DataSource(ITEMS, 4, seed=3)
    first = a.next_batch()
    assert first == b.next_batch() and len(first) == 4 and all(item in ITEMS for item in first)
    assert a.longest_prompt == 10


def test_restored_state_draws_what_the_original_would_have():
    a = DataSource(ITEMS, 3, seed=1)
    a.next_batch()
    saved = a.state()
    want = [a.next_batch() for _ in range(3)]
    b = DataSource(ITEMS, 3, seed=99)
    b.restore(saved)
    assert [b.next_batch() for _ in range(3)] == want


def test_an_empty_pool_is_refused():
    with pytest.raises(ValueError):
        DataSource([], 1, 0)


def test_prompts_over_the_budget_are_left_out():
    class Tok:  # no chat template: "INSTRUCTION\nQuestion: ...\nAnswer:" split on spaces
        chat_template = None

        def __call__(self, text):
            return {"input_ids": list(range(len(text.split())))}

    data = DataSource.from_dataset("arith", Tok(), prompt_budget=10_000, batch_size=2, seed=0)
    assert len(data.items) > 0 and data.longest_prompt <= 10_000
    with pytest.raises(ValueError, match="longer than 1 tokens"):
        DataSource.from_dataset("arith", Tok(), prompt_budget=1, batch_size=2, seed=0)
