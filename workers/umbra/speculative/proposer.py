"""The vLLM ``custom_class`` proposer of grouped speculative decoding.

vLLM loads it by path in every worker (``speculative_config={"method": "custom_class",
"model": "umbra.speculative.proposer.GroupedSuffixProposer", "num_speculative_tokens": 8}``)
and calls ``propose`` once per step. Drafts come from the row's group suffix index;
the batch's draft length follows Alg. 1 (``draft_length``). Verification is vLLM's
own (rejection sampler), so outputs stay lossless.
"""
from __future__ import annotations

import time

from umbra.speculative.draft_length import AcceptanceStats, StepCost, choose_draft_length
from umbra.speculative.replica import GroupReplica

MIN_MATCH = 2  # lambda: a draft needs the last >= 2 context tokens matched in the group


class GroupedSuffixProposer:
    """Proposes per-row drafts from the group replica; adapts the draft length per batch."""

    def __init__(self, vllm_config=None, gamma_max: int | None = None):
        if vllm_config is not None:  # inside an engine's worker process
            from umbra.speculative import vllm_cpu_fix

            vllm_cpu_fix.apply()
        spec = getattr(vllm_config, "speculative_config", None)
        self.gamma_max = gamma_max or (spec.num_speculative_tokens if spec else 8)
        self.replica = GroupReplica()
        self.stats = AcceptanceStats(self.gamma_max)
        self.cost = StepCost()
        self.last: dict[tuple, int] = {}  # (group, context length, last token) -> draft length
        self.last_time: float | None = None
        self.last_tokens = 0

    def load_model(self, *args, **kwargs) -> None:
        """vLLM may call this on drafters; there is no draft model."""

    def propose(self, sampled_token_ids, num_tokens_no_spec, token_ids_cpu, **kwargs) -> list[list[int]]:
        """Drafts per row (``[rows][<= gamma]``); ``[]`` for rows without a usable match.

        Args: the tokens sampled this step per row (accepted drafts + bonus),
        context lengths per row, and the token buffer ``[max_rows, max_len]``.
        """
        now = time.perf_counter()
        if self.last_time is not None and self.last_tokens:
            self.cost.observe(self.last_tokens, now - self.last_time)
        rows = len(sampled_token_ids)
        if self.last:  # verdicts on last step's drafts
            for i in range(rows):
                sampled = len(sampled_token_ids[i])
                n = int(num_tokens_no_spec[i]) - sampled
                if sampled and n > 0:
                    prev = self.last.pop((self.replica.group_of(token_ids_cpu[i, :n]), n, int(token_ids_cpu[i, n - 1])),
                                         None)
                    if prev:
                        self.stats.update(prev, sampled - 1)
            self.last.clear()  # rows that ended mid-draft leave stale entries
        gamma = choose_draft_length(rows, self.stats, self.cost, self.gamma_max)
        drafts: list[list[int]] = [[] for _ in range(rows)]
        if gamma:  # speculation off costs one cost-model update per step, nothing per row
            for i in range(rows):
                if not len(sampled_token_ids[i]):
                    continue  # no sampled token (e.g. mid-prefill): vLLM expects no draft
                n = int(num_tokens_no_spec[i])
                ctx = token_ids_cpu[i, :n]
                g = self.replica.group_of(ctx)
                if g is None or g not in self.replica.index:
                    continue
                draft = self.replica.index[g].propose(ctx[-self.replica.max_match:].tolist(), gamma, MIN_MATCH)
                if draft:
                    self.last[(g, n, int(ctx[-1]))] = len(draft)
                    drafts[i] = draft
        self.last_time = time.perf_counter()
        self.last_tokens = rows + sum(len(d) for d in drafts)
        return drafts
