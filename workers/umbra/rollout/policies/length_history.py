"""Length history: a prompt seen in earlier rollouts brings its responses' lengths as a
prior for its group's length estimate (ours, beyond Seer; the idea of TailSieve, which
reports prompt identity explaining ~65% of length variance across rounds).

RL trains several epochs over a data set, so a prompt comes back. Seer estimates a group's
length from its responses completed *in this rollout* (``max_tokens`` until its probe ends);
with history the estimate starts at the longest of the prompt's ``keep`` most recent
responses, so long groups are ranked first from the first decision.
"""
from __future__ import annotations

from collections import deque


def prompt_key(r) -> int | tuple:
    """What identifies a request's prompt across rollouts: its token ids (the simulator's
    token-free requests: their group id, which names the same prompt in every iteration)."""
    ids = getattr(r, "prompt_token_ids", None)
    return hash(tuple(ids)) if ids is not None else ("group", r.group_id)


class LengthHistory:
    """The most recent ``keep`` response lengths of each prompt, for at most ``max_prompts``
    prompts (the least recently recorded are dropped first)."""

    def __init__(self, keep: int = 16, max_prompts: int = 1_000_000):
        if not (isinstance(keep, int) and isinstance(max_prompts, int)) or keep < 1 or max_prompts < 1:
            raise ValueError("a length history keeps >= 1 length for >= 1 prompt")
        self.keep, self.max_prompts = keep, max_prompts
        self._lengths: dict = {}

    def __len__(self) -> int:
        return len(self._lengths)

    def record(self, r) -> None:
        """A request finished: remember its length (tokens generated) under its prompt."""
        key = prompt_key(r)
        lengths = self._lengths.pop(key, None) or deque(maxlen=self.keep)
        lengths.append(r.num_generated)
        self._lengths[key] = lengths  # re-inserted: most recently recorded last
        if len(self._lengths) > self.max_prompts:
            del self._lengths[next(iter(self._lengths))]

    def prior(self, r) -> int | None:
        """The longest remembered response to ``r``'s prompt, or None if it was never seen
        (Seer's estimate is its group's longest response, so the prior is too)."""
        lengths = self._lengths.get(prompt_key(r))
        return max(lengths) if lengths else None
