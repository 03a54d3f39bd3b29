"""An instance's local replica of the draft server: group suffix indexes and the
prompt of each group (rows are recognised by their prompt: the proposer gets no
request ids)."""
from __future__ import annotations

from umbra.speculative.suffix_index import SuffixIndex


class GroupReplica:
    """Suffix indexes by group, fed incrementally with ``(key, tokens)`` updates.

    Indexing is lazy (ours): updates wait in ``pending`` until a draft is asked of their
    group (:meth:`suffix_index`). Alg. 1 drafts only at small batches, so through most of a
    rollout the engine's worker spends nothing on indexing (it cost 1.4% of the worker's
    time when every chunk's update was indexed at once).
    """

    def __init__(self, max_match: int = 16):
        self.max_match = max_match
        self.index: dict[int, SuffixIndex] = {}
        self.pending: dict[int, list[tuple[str, list[int]]]] = {}
        self.by_prompt: dict[int, dict[bytes, int]] = {}  # prompt length -> prompt bytes -> group

    def reset(self) -> None:
        self.index.clear()
        self.pending.clear()
        self.by_prompt.clear()

    def __contains__(self, group) -> bool:
        return group in self.index

    def __bool__(self) -> bool:
        return bool(self.index)

    def apply(self, group: int, prompt: list[int], updates: list[tuple[str, list[int]]]) -> None:
        """Register ``group``'s prompt and queue its new response tokens."""
        self.by_prompt.setdefault(len(prompt), {})[_bytes(prompt)] = group
        self.index.setdefault(group, SuffixIndex(self.max_match))
        if updates:
            self.pending.setdefault(group, []).extend(updates)

    def suffix_index(self, group: int) -> SuffixIndex:
        """``group``'s suffix index with every queued update applied (``group`` must be registered)."""
        idx = self.index[group]
        for key, tokens in self.pending.pop(group, ()):
            idx.extend(key, tokens)
        return idx

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
