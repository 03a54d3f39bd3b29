"""An instance's local replica of the draft server: group suffix indexes and the
prompt of each group (rows are recognised by their prompt: the proposer gets no
request ids)."""
from __future__ import annotations

from umbra.speculative.suffix_index import SuffixIndex


class GroupReplica:
    """Suffix indexes by group, fed incrementally with ``(key, tokens)`` updates."""

    def __init__(self, max_match: int = 16):
        self.max_match = max_match
        self.index: dict[int, SuffixIndex] = {}
        self.by_prompt: dict[int, dict[bytes, int]] = {}  # prompt length -> prompt bytes -> group

    def reset(self) -> None:
        self.index.clear()
        self.by_prompt.clear()

    def apply(self, group: int, prompt: list[int], updates: list[tuple[str, list[int]]]) -> None:
        """Register ``group``'s prompt and append its new response tokens."""
        self.by_prompt.setdefault(len(prompt), {})[_bytes(prompt)] = group
        idx = self.index.setdefault(group, SuffixIndex(self.max_match))
        for key, tokens in updates:
            idx.extend(key, tokens)

    def group_of(self, tokens) -> int | None:
        """The group whose prompt starts ``tokens`` (a sequence of ints; the longest such
        prompt wins), or None."""
        for length, table in sorted(self.by_prompt.items(), reverse=True):
            if len(tokens) >= length:
                g = table.get(_bytes(tokens[:length]))
                if g is not None:
                    return g
        return None


def _bytes(tokens) -> bytes:
    import numpy as np

    return np.asarray(tokens, dtype=np.int64).tobytes()
