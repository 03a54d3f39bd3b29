"""A run and ``umbra bench rollout`` size their engines by one rule (``RolloutShape.fit``):
engines as long as the longest prompt they will see plus ``max_tokens`` (within the model's
context), running at most the configured ``max_num_seqs``, and a concurrency cap that fits
that many worst-case requests into the KV budget.

(The rollout manager is stopped where it would start engines: no Ray, no vLLM.)"""
from __future__ import annotations

import argparse

import pytest

from umbra.config import PROMPT_BUDGET, RunConfig
from umbra.rollout.capacity import concurrency_cap
from umbra.rollout.manager import DRAFT_ROOM, RolloutManager


class _Started(Exception):
    """Raised instead of starting engines; carries the shape they would have had."""

    def __init__(self, shape):
        super().__init__("engines would start here")
        self.shape = shape


@pytest.fixture
def engines(monkeypatch):
    """Make RolloutManager.start raise _Started with the shape it was given."""
    def start(cls, model_path, instances, shape, seed, speculation=None):
        raise _Started(shape)

    monkeypatch.setattr(RolloutManager, "start", classmethod(start))
    import ray  # the placement check before engines start reads the cluster's resources
    monkeypatch.setattr(ray, "cluster_resources", lambda: {"CPU": 16.0})


def test_a_run_sizes_its_engines_for_its_longest_prompt(tiny_model_path, engines):
    from transformers import AutoTokenizer

    from umbra.data.source import DataSource
    from umbra.job.parts import start_parts

    config = RunConfig(model="tiny", dataset="arith", max_tokens=64, max_num_seqs=4096, kv_cache_gib=1)
    with pytest.raises(_Started) as started:
        start_parts(config)
    shape = started.value.shape
    data = DataSource.from_dataset("arith", AutoTokenizer.from_pretrained(tiny_model_path), PROMPT_BUDGET,
                                   config.prompts_per_iteration, config.seed)
    assert shape.max_model_len == min(1024, data.longest_prompt + config.max_tokens + DRAFT_ROOM)
    assert shape.max_num_seqs == config.max_num_seqs
    longest = min(1024, data.longest_prompt + config.max_tokens)  # the worst case a request can reach
    assert shape.capacity == concurrency_cap(tiny_model_path, 1, longest, 4096)


def test_the_benchmark_sizes_its_engines_by_the_same_rule(tiny_model_path, engines, monkeypatch):
    import ray

    from umbra.bench import rollout as bench

    monkeypatch.setattr(ray, "init", lambda *a, **k: None)
    p = argparse.ArgumentParser()
    bench.add_arguments(p)
    args = p.parse_args(["--model", "tiny", "--max-tokens", "512", "--max-num-seqs", "4096", "--prompts", "4"])
    with pytest.raises(_Started) as started:
        bench.run(args)
    shape = started.value.shape
    assert shape.capacity < 4096  # the KV budget binds, not --max-num-seqs
    assert shape.max_num_seqs == 4096 and shape.max_model_len <= 1024
    assert shape.capacity == concurrency_cap(tiny_model_path, 1, shape.max_model_len - DRAFT_ROOM, 4096)


def test_train_max_samples_keeps_the_first_problems_after_the_hold_out(tiny_model_path):
    """A small training set (veRL's ``train_max_samples``) brings each prompt back every few
    iterations; the held-out validation rows stay the same."""
    from transformers import AutoTokenizer

    from umbra.job.parts import training_data

    tok = AutoTokenizer.from_pretrained(tiny_model_path)
    base = dict(model="tiny", dataset="arith-easy", val_fraction=0.25, val_every=1, prompts_per_iteration=4)
    full, val_full = training_data(RunConfig(**base), tok)
    small, val_small = training_data(RunConfig(**base, train_max_samples=8), tok)
    assert len(small.items) == 8 and [i.token_ids for i in small.items] == [i.token_ids for i in full.items[:8]]
    assert [i.token_ids for i in val_small] == [i.token_ids for i in val_full]
    seen = {tuple(i.token_ids) for _ in range(6) for i in small.next_batch()}
    assert seen <= {tuple(i.token_ids) for i in small.items} and len(seen) > 4  # prompts come back
