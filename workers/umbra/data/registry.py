"""Resolve a run config's ``dataset`` field: ``arith`` or a GSM8K-style JSONL path."""
from __future__ import annotations

from itertools import islice
from pathlib import Path

from umbra.data import arith, gsm8k
from umbra.data.problem import Problem
from umbra.paths import is_file

NAMED_DATASETS = ("arith",)


def check_dataset(name: str) -> None:
    """Cheap validation for forms: the name is known, or the file exists and its
    first lines parse.

    Raises:
        ValueError: with a message naming the problem.
    """
    if name in NAMED_DATASETS:
        return
    p = Path(name)
    if not is_file(name):
        hint = " (not an existing file)" if "/" in name or name.endswith(".jsonl") else ""
        raise ValueError(f"unknown dataset '{name[:200]}'{hint}: use 'arith' or the path of a GSM8K-style "
                         "JSONL file")
    try:
        with p.open(encoding="utf-8") as fh:
            gsm8k.parse_lines(islice(fh, 50))
    except UnicodeDecodeError:
        raise ValueError(f"dataset '{name}' is not UTF-8 text") from None
    except OSError:
        raise ValueError(f"dataset '{name}' cannot be read") from None


def load_problems(name: str, seed: int = 0) -> list[Problem]:
    """All problems of data set ``name``. Raises DatasetError / ValueError."""
    if name == "arith":
        return arith.generate(seed=seed)
    return gsm8k.load_jsonl(name)
