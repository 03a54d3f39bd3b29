"""A group's suffix structure: every response of the group so far, indexed so that the
longest suffix of a request's context that occurs in the group is found quickly, with
the continuations that followed it (Seer §5: groups share response patterns).

n-gram hash index: for n = 1..max_match, ``tuple(tokens[p-n:p]) -> [(seq, p)]``; a
query walks n from long to short, so it finds the longest match in O(max_match).
"""
from __future__ import annotations

from collections import Counter, defaultdict


class SuffixIndex:
    """Token sequences of one group, appended incrementally.

    Args:
        max_match: longest context suffix considered (tokens).
    """

    def __init__(self, max_match: int = 16):
        self.max_match = max_match
        self.seqs: dict[str, list[int]] = {}
        self.grams: dict[tuple[int, ...], list[tuple[str, int]]] = defaultdict(list)

    def extend(self, key: str, tokens: list[int]) -> None:
        """Append ``tokens`` to sequence ``key`` (created if new) and index the new end positions."""
        seq = self.seqs.setdefault(key, [])
        old = len(seq)
        seq.extend(tokens)
        for p in range(old + 1, len(seq) + 1):
            for n in range(1, min(self.max_match, p) + 1):
                self.grams[tuple(seq[p - n:p])].append((key, p))

    def longest_match(self, context: list[int]) -> tuple[int, list[tuple[str, int]]]:
        """``(n, positions)``: the longest ``n <= max_match`` such that the last ``n`` tokens of
        ``context`` occur in some sequence followed by at least one more token, and the end
        positions of those occurrences. An occurrence at a sequence's very end (typically
        the request's own context, fed back after its last chunk) has nothing to draft from
        and would hide shorter matches that do. ``(0, [])`` when there is no such match."""
        for n in range(min(self.max_match, len(context)), 0, -1):
            hits = [(k, p) for k, p in self.grams.get(tuple(context[-n:]), ()) if p < len(self.seqs[k])]
            if hits:
                return n, hits
        return 0, []

    def propose(self, context: list[int], max_tokens: int, min_match: int = 1, top_k: int = 4,
                max_paths: int = 64) -> list[int]:
        """Draft up to ``max_tokens`` tokens continuing ``context``.

        Multi-path: the continuations after every occurrence of the longest matched
        suffix form a tree; it is walked greedily, each step taking the token that most
        of the (top-``top_k``-ranked) surviving paths agree on, and stops where no path
        goes on. Only the ``max_paths`` latest occurrences are followed, which bounds
        the work per draft (it runs inside the engine's step). Returns ``[]`` when the
        match is shorter than ``min_match``.
        """
        return [tok for tok, _, _ in self.propose_scored(context, max_tokens, min_match, top_k, max_paths)]

    def propose_scored(self, context: list[int], max_tokens: int, min_match: int = 1, top_k: int = 4,
                       max_paths: int = 64) -> list[tuple[int, int, int]]:
        """:meth:`propose`'s draft with each token's support ``(token, agree, total)``: of the
        ``total`` paths still matching before it, ``agree`` continue with it (SuffixDecoding's
        suffix-count score, which Seer §3.4 weights candidates by)."""
        n, hits = self.longest_match(context)
        if n < min_match or max_tokens <= 0:
            return []
        paths = [(self.seqs[k], p) for k, p in hits[-max_paths:]]
        draft: list[tuple[int, int, int]] = []
        while len(draft) < max_tokens:
            d = len(draft)
            nxt = Counter(seq[p + d] for seq, p in paths if p + d < len(seq))
            if not nxt:
                break
            tok, agree = nxt.most_common(top_k)[0]
            draft.append((tok, agree, sum(nxt.values())))
            paths = [(seq, p) for seq, p in paths if p + d < len(seq) and seq[p + d] == tok]
        return draft
