"""Loader for GSM8K-style JSONL: one object per line with ``question`` and ``answer``,
the answer's last line being ``#### <final answer>``."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable

from umbra.data.problem import Problem

MAX_FILE_BYTES = 64 * 1024 * 1024


class DatasetError(ValueError):
    """A data set file is missing, too large, unreadable or of no known row shape (message says where)."""


def parse_line(line: str, lineno: int) -> Problem:
    """Parse one JSONL line into a :class:`Problem`.

    Raises:
        DatasetError: not JSON, missing fields, or no ``#### answer`` marker.
    """
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise DatasetError(f"line {lineno}: not JSON ({exc.msg})") from None
    except (ValueError, RecursionError):  # absurd nesting or number sizes
        raise DatasetError(f"line {lineno}: JSON too deeply nested or too large") from None
    if not isinstance(obj, dict) or not isinstance(obj.get("question"), str) or not isinstance(obj.get("answer"), str):
        raise DatasetError(f"line {lineno}: needs string fields 'question' and 'answer'")
    return Problem(question=obj["question"].strip(), answer=final_answer(obj["answer"], f"line {lineno}"))


def final_answer(answer: str, where: str) -> str:
    """The final answer of a GSM8K solution: the text after its last ``####``, commas dropped.

    Raises:
        DatasetError: (prefixed by ``where``) no ``####`` marker or nothing after it.
    """
    if "####" not in answer:
        raise DatasetError(f"{where}: answer has no '#### <final answer>' line")
    final = answer.rsplit("####", 1)[1].strip().replace(",", "")
    if not final:
        raise DatasetError(f"{where}: empty final answer after '####'")
    return final


def parse_lines(lines: Iterable[str]) -> list[Problem]:
    """Parse JSONL text lines, skipping blank ones. Raises DatasetError."""
    problems = [parse_line(line, i) for i, line in enumerate(lines, 1) if line.strip()]
    if not problems:
        raise DatasetError("no problems in the file")
    return problems


def load_jsonl(path: str | Path) -> list[Problem]:
    """Load every problem of a GSM8K-style JSONL file.

    Raises:
        DatasetError: missing/oversized file or a malformed line.
    """
    p = Path(path)
    if not p.is_file():
        raise DatasetError(f"no such file: {p}")
    if p.stat().st_size > MAX_FILE_BYTES:
        raise DatasetError(f"{p} is larger than {MAX_FILE_BYTES // 2**20} MiB")
    try:
        with p.open(encoding="utf-8") as fh:
            return parse_lines(fh)
    except UnicodeDecodeError:
        raise DatasetError(f"{p} is not UTF-8 text") from None
