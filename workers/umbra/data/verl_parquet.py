"""Write problems as a Parquet file in veRL's row shape, as veRL's own
``examples/data_preprocess/gsm8k.py`` writes GSM8K: ``data_source``, ``prompt`` (one user
message: the question plus the instruction), ``ability``, ``reward_model`` (``style: rule``,
``ground_truth``) and ``extra_info`` (``split``, ``index``). For tests and examples."""
from __future__ import annotations

from pathlib import Path

from umbra.data.problem import Problem

# veRL's gsm8k.py instruction, appended to each question
VERL_INSTRUCTION = "Let's think step by step and output the final answer after \"####\"."


def verl_rows(problems: list[Problem], data_source: str = "openai/gsm8k", split: str = "test") -> list[dict]:
    """veRL-shaped rows of ``problems`` (their ``question`` and ``answer``)."""
    return [{"data_source": data_source,
             "prompt": [{"role": "user", "content": f"{p.question} {VERL_INSTRUCTION}"}],
             "ability": "math", "reward_model": {"style": "rule", "ground_truth": p.answer},
             "extra_info": {"split": split, "index": i}} for i, p in enumerate(problems)]


def write_verl_parquet(problems: list[Problem], path: str | Path, data_source: str = "openai/gsm8k") -> Path:
    """Write ``problems`` to ``path`` (Parquet, pyarrow) in veRL's row shape; returns the path."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(path)
    pq.write_table(pa.Table.from_pylist(verl_rows(problems, data_source)), path)
    return path
