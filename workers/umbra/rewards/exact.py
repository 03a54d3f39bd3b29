"""The ``exact`` reward (ours): normalised string match of the final answer and the reference.

The final answer is ``umbra.rewards.extract.final_answer``'s when the response has a marker
(``####``, ``\\boxed{}``, "answer is"), else the whole response. Normalising: Unicode NFKC,
case folded, markdown ``*`` / backticks and surrounding quotes dropped, whitespace collapsed,
a trailing ``.`` dropped.
"""
from __future__ import annotations

import unicodedata

from umbra.rewards.extract import final_answer


def normalise(text: str) -> str:
    """``text`` as compared by the ``exact`` reward."""
    t = unicodedata.normalize("NFKC", text).casefold().replace("*", "").replace("`", "")
    t = " ".join(t.split()).strip().strip("\"'").strip()
    return t[:-1].rstrip() if t.endswith(".") else t


def exact_reward(response: str, answer: str) -> float:
    """1.0 when the normalised final answer equals the normalised ``answer``, else 0.0."""
    found = final_answer(response) if any(m in response for m in ("####", "\\boxed", "nswer")) else response
    return 1.0 if found is not None and normalise(found) == normalise(answer) else 0.0
