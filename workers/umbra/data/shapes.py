"""Row shapes of a data set file, recognised from its columns: veRL's, TRL's and GSM8K's.

- ``verl`` (veRL's RL data format): ``prompt`` = chat messages, ``data_source``,
  ``reward_model`` = ``{"ground_truth": ..., "style": ...}``, optional ``extra_info`` (a mapping).
- ``trl`` (TRL's prompt-only format, GRPOTrainer): ``prompt`` = a string or chat messages;
  every other column goes to the reward function (``Problem.extra_info``); the reference
  answer is the first of ``ground_truth``/``answer``/``solution`` present (ours: TRL leaves
  it to the reward function), else empty.
- ``gsm8k`` (as before): ``question`` and ``answer`` strings, ``answer`` ending in
  ``#### <final answer>``.
"""
from __future__ import annotations

import json
from typing import Any, Iterable

from umbra.data.gsm8k import DatasetError, final_answer
from umbra.data.problem import Problem

EXPECTED = {
    "verl": ("prompt", "data_source", "reward_model"),
    "trl": ("prompt",),
    "gsm8k": ("question", "answer"),
}
TRL_ANSWER_COLUMNS = ("ground_truth", "answer", "solution")


def expected_text() -> str:
    """The columns each shape needs, for error messages."""
    return "; ".join(f"{name}: {', '.join(cols)}" for name, cols in EXPECTED.items())


def detect_shape(columns: Iterable[str]) -> str:
    """``"verl"``, ``"trl"`` or ``"gsm8k"`` for a file with ``columns``.

    Raises:
        DatasetError: no shape fits; the message names the columns found and those expected.
    """
    cols = set(columns)
    if {"prompt", "reward_model"} <= cols:
        missing = [c for c in EXPECTED["verl"] if c not in cols]
        if missing:
            raise DatasetError(f"veRL-shaped file (prompt, reward_model) lacks column(s) {', '.join(missing)}; "
                               f"columns found: {', '.join(sorted(cols))}")
        return "verl"
    if "prompt" in cols:
        return "trl"
    if {"question", "answer"} <= cols:
        return "gsm8k"
    raise DatasetError(f"no known row shape: columns found: {', '.join(sorted(cols)) or '(none)'}; "
                       f"expected {expected_text()}")


def _messages(value: Any, where: str) -> tuple:
    """Chat messages as a tuple of ``{"role", "content"}`` dicts. Raises DatasetError."""
    if not isinstance(value, (list, tuple)) or not value:
        raise DatasetError(f"{where} must be a non-empty list of chat messages ({{'role', 'content'}})")
    out = []
    for m in value:
        if not isinstance(m, dict) or not isinstance(m.get("role"), str) or not isinstance(m.get("content"), str):
            raise DatasetError(f"{where}: every chat message needs string 'role' and 'content'")
        out.append({"role": m["role"], "content": m["content"]})
    return tuple(out)


def _last_user_text(messages: tuple) -> str:
    users = [m["content"] for m in messages if m["role"] == "user"]
    return (users or [messages[-1]["content"]])[-1]


def _reference(value: Any, where: str) -> str:
    """A ground truth as text: strings as they are, numbers printed, lists/mappings as JSON (ours)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or value is None:
        raise DatasetError(f"{where} must be a string, a number, a list or a mapping")
    if isinstance(value, (int, float)):
        return str(value)
    try:
        return json.dumps(value, sort_keys=True)
    except (TypeError, ValueError):
        raise DatasetError(f"{where} must be a string, a number, a list or a mapping") from None


def verl_row(row: dict, n: int) -> Problem:
    """A veRL-shaped row (row number ``n``, from 1). Raises DatasetError naming the row."""
    messages = _messages(row.get("prompt"), f"row {n}: prompt")
    source = row.get("data_source")
    if not isinstance(source, str):
        raise DatasetError(f"row {n}: data_source must be a string")
    rm = row.get("reward_model")
    if not isinstance(rm, dict) or rm.get("ground_truth") is None:
        raise DatasetError(f"row {n}: reward_model must be a mapping with a 'ground_truth'")
    extra = row.get("extra_info")
    if extra is not None and not isinstance(extra, dict):
        raise DatasetError(f"row {n}: extra_info must be a mapping")
    return Problem(question=_last_user_text(messages), answer=_reference(rm["ground_truth"],
                   f"row {n}: reward_model.ground_truth"), data_source=source, messages=messages,
                   extra_info=dict(extra or {}))


def trl_row(row: dict, n: int) -> Problem:
    """A TRL-shaped row: a string prompt (kept plain) or chat messages; the other columns
    become ``extra_info``. Raises DatasetError naming the row."""
    prompt = row.get("prompt")
    if prompt is None:  # datasets fills a column that some rows lack with None
        raise DatasetError(f"row {n}: no 'prompt' (every row of a file needs the same shape: "
                           f"{expected_text()})")
    if isinstance(prompt, str):
        if not prompt.strip():
            raise DatasetError(f"row {n}: prompt is empty")
        question, messages = prompt.strip(), ()
    else:
        messages = _messages(prompt, f"row {n}: prompt (a string or chat messages)")
        question = _last_user_text(messages)
    extra = {k: v for k, v in row.items() if k != "prompt"}
    answer = next((extra[k] for k in TRL_ANSWER_COLUMNS if extra.get(k) is not None), "")
    source = extra.get("data_source")
    return Problem(question=question, answer=_reference(answer, f"row {n}: reference answer") if answer != "" else "",
                   data_source=source if isinstance(source, str) else "", messages=messages, extra_info=extra)


def gsm8k_row(row: dict, n: int) -> Problem:
    """A GSM8K-shaped row (``question``, ``answer`` with ``#### final``). Raises DatasetError."""
    q, a = row.get("question"), row.get("answer")
    if not isinstance(q, str) or not isinstance(a, str):
        raise DatasetError(f"row {n}: needs string fields 'question' and 'answer'")
    return Problem(question=q.strip(), answer=final_answer(a, f"row {n}"))


ROW_READERS = {"verl": verl_row, "trl": trl_row, "gsm8k": gsm8k_row}


def rows_to_problems(columns: Iterable[str], rows: Iterable[dict]) -> tuple[str, list[Problem]]:
    """``(shape, problems)`` of a file's rows (numbered from 1). Raises DatasetError."""
    shape = detect_shape(columns)
    read = ROW_READERS[shape]
    problems = [read(row, n) for n, row in enumerate(rows, 1)]
    if not problems:
        raise DatasetError("no rows in the file")
    return shape, problems
