"""Find a response's final answer (ours): the text after the last ``####`` (GSM8K's marker),
else the last ``\\boxed{...}``, else what follows a final "answer is" / "Answer:".

A response with none of these has no answer (a response cut off at ``max_tokens`` must not
score by the accident of its last number), and neither has a hedge that names two answers
("#### 18 or 25").
"""
from __future__ import annotations

import re

_ANSWER_IS = re.compile(r"(?:answer\s+is\s*:?|answer\s*:)\s*", re.IGNORECASE)
# two answers named where one belongs: "18 or 25", "18, 25", "18 and 25", "18; 25" ("70,000" is one)
_HEDGE = re.compile(r"\d[^\d\n]*?(?:\bor\b|\band\b|;|,\s)[^\d\n]*?\d", re.IGNORECASE)


def _after_marker(text: str, numeric: bool) -> str:
    """The expression on the line after the last ``####``: the rest of that line, or the next
    non-empty line when the marker ends its line. ``numeric``: the last marker whose
    expression holds a digit (a later "#### done" revises nothing)."""
    parts = text.split("####")
    for tail in reversed(parts[1:]):
        lines = tail.split("\n")
        found = lines[0].strip() or next((ln.strip() for ln in lines if ln.strip()), "")
        if not numeric or any(c.isdigit() for c in found):
            return found
    return ""


def _last_boxed(text: str) -> str | None:
    """The content of the last ``\\boxed{...}`` (balanced braces), or None; an unclosed box counts as none."""
    start = text.rfind("\\boxed")
    while start != -1:
        i = text.find("{", start)
        if i != -1 and not text[start + len("\\boxed"):i].strip():
            depth = 0
            for j in range(i, len(text)):
                depth += {"{": 1, "}": -1}.get(text[j], 0)
                if depth == 0:
                    return text[i + 1:j].strip()
        start = text.rfind("\\boxed", 0, start)
    return None


def _after_answer_is(text: str) -> str | None:
    """The rest of the line after the last "answer is" / "Answer:", or None."""
    found = list(_ANSWER_IS.finditer(text))
    return text[found[-1].end():].split("\n", 1)[0].strip() if found else None


def final_answer(response: str, numeric: bool = False) -> str | None:
    """The final answer text of ``response``, or None (no marker, an empty one, or a hedge);
    ``numeric``: a ``####`` answer must hold a digit (the math reward's rule)."""
    if "####" in response:
        found = _after_marker(response, numeric)
    elif (boxed := _last_boxed(response)) is not None:
        found = boxed
    else:
        found = _after_answer_is(response)
    if not found or _HEDGE.search(found):
        return None
    return found
