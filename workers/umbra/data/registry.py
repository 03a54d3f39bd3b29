"""Resolve a run config's ``dataset`` / ``val_dataset`` field: a generated set (``arith``,
``arith-easy``, ``countdown``) or the path of a
data set file (JSONL, Parquet or a ``save_to_disk`` folder; see ``umbra.data.files``)."""
from __future__ import annotations

import logging

from umbra.data import arith, countdown
from umbra.data.files import LoadedFile, is_dataset_path, load_file

NAMED_DATASETS = ("arith", "arith-easy", "countdown")
_GENERATED = {"arith": arith.generate, "arith-easy": arith.generate_easy, "countdown": countdown.generate}
# a generated set as a validation set: another seed than training's (ours)
VAL_ARITH_SEED_OFFSET = 1_000_003

log = logging.getLogger("umbra.job")


def check_dataset(name: str) -> None:
    """Validation for forms, the API and the job: the name is known, or the file loads
    (every row is read: a bad row fails the submission, not the run).

    Raises:
        ValueError: with a message naming the problem (the file's columns, the bad row).
    """
    if name in NAMED_DATASETS:
        return
    if not is_dataset_path(name):
        hint = " (not an existing file)" if "/" in name or "." in name else ""
        raise ValueError(f"unknown dataset '{name[:200]}'{hint}: use 'arith', 'arith-easy', 'countdown' or the path of a JSONL or Parquet "
                         "file or a datasets save_to_disk folder")
    load_file(name)


def load_dataset(name: str, seed: int = 0) -> LoadedFile:
    """The problems of data set ``name`` and their row shape (``arith`` for the generated set);
    logs the shape found. Raises DatasetError / ValueError."""
    loaded = LoadedFile(name, _GENERATED[name](seed=seed)) if name in _GENERATED else load_file(name)
    log.info("data set %s: %d rows in %s's row shape", name, len(loaded.problems), loaded.shape)
    return loaded


def load_problems(name: str, seed: int = 0) -> list:
    """All problems of data set ``name``. Raises DatasetError / ValueError."""
    return load_dataset(name, seed).problems
