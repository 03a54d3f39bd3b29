"""Responses from earlier rollouts, per prompt, as extra draft sources (ours, beyond Seer;
the idea of RhymeRL's HistoSpec and of DAS): RL goes over its data set for several epochs,
so a prompt comes back, and what the policy answered to it last time is a good guess of
what it answers now. Bounded: per prompt the ``per_prompt`` most recent responses; responses
more than ``max_age`` policy versions older than the rollout asking are dropped; in all at
most ``max_bytes`` of tokens (4 bytes each), least recently used prompts dropped first.
"""
from __future__ import annotations

import hashlib
from array import array
from collections import OrderedDict, deque

PER_PROMPT = 8             # one GRPO group's worth
MAX_AGE = 16               # policy versions (= iterations in a run)
MAX_BYTES = 64 * 2**20     # 16M tokens


def prompt_key(prompt: list[int]) -> bytes:
    """A prompt's identity: 16 bytes of the BLAKE2 digest of its token ids."""
    return hashlib.blake2b(array("q", prompt).tobytes(), digest_size=16).digest()


class ResponseHistory:
    """``prompt -> [(policy version, response tokens)]``, most recent last."""

    def __init__(self, per_prompt: int = PER_PROMPT, max_age: int = MAX_AGE, max_bytes: int = MAX_BYTES):
        if per_prompt < 1 or max_age < 0 or max_bytes < 0:
            raise ValueError("per_prompt must be >= 1, max_age and max_bytes >= 0")
        self.per_prompt, self.max_age, self.max_bytes = per_prompt, max_age, max_bytes
        self._by_prompt: OrderedDict[bytes, deque[tuple[int, array]]] = OrderedDict()
        self.nbytes = 0

    def __len__(self) -> int:
        """Prompts remembered."""
        return len(self._by_prompt)

    @property
    def responses(self) -> int:
        return sum(len(d) for d in self._by_prompt.values())

    def clear(self) -> None:
        self._by_prompt.clear()
        self.nbytes = 0

    def add(self, prompt: list[int], responses: list[list[int]], version: int) -> None:
        """Remember ``responses`` to ``prompt``, sampled with policy version ``version``."""
        key = prompt_key(prompt)
        kept = self._by_prompt.pop(key, None) or deque()
        self._by_prompt[key] = kept  # most recently used last
        for tokens in responses:
            if tokens:
                kept.append((version, array("i", tokens)))
                self.nbytes += 4 * len(tokens)
        while len(kept) > self.per_prompt:
            self.nbytes -= 4 * len(kept.popleft()[1])
        self._trim()

    def recall(self, prompt: list[int], version: int) -> list[list[int]]:
        """The remembered responses to ``prompt`` at most ``max_age`` versions older than
        ``version`` (older ones are dropped), oldest first."""
        key = prompt_key(prompt)
        kept = self._by_prompt.get(key)
        if kept is None:
            return []
        while kept and version - kept[0][0] > self.max_age:
            self.nbytes -= 4 * len(kept.popleft()[1])
        if not kept:
            del self._by_prompt[key]
            return []
        self._by_prompt.move_to_end(key)
        return [tokens.tolist() for _, tokens in kept]

    def _trim(self) -> None:
        while self.nbytes > self.max_bytes and self._by_prompt:
            _, dropped = self._by_prompt.popitem(last=False)
            self.nbytes -= sum(4 * len(t) for _, t in dropped)
