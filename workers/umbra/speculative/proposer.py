"""The vLLM ``custom_class`` proposer of grouped speculative decoding.

vLLM loads it by path in every worker (``speculative_config={"method": "custom_class",
"model": "umbra.speculative.proposer.GroupedSuffixProposer", "num_speculative_tokens": 8}``)
and calls ``propose`` once per step. Drafts come from the row's group suffix index;
the batch's draft length follows Alg. 1 (``draft_length``). Verification is vLLM's
own (rejection sampler), so outputs stay lossless.

vLLM passes no request ids, so a row's group is read from the engine's input batch (set by
the worker hook, ``bind``): its request id starts with the rollout request's
``g<group>-r<index>``. Without it (or for ids of another shape) the group is recognised by
its prompt, which costs a prompt comparison per row and step.
"""
from __future__ import annotations

import json
import os
import re
import time

from umbra.speculative.draft_budget import DraftConfidence, allocate, chain
from umbra.speculative.draft_length import AcceptanceStats, StepCost, choose_draft_length
from umbra.speculative.replica import GroupReplica

MIN_MATCH = 2  # lambda: a draft needs the last >= 2 context tokens matched in the group
# debugging and offline fits: append each step's rows, draft length and cost fit (JSON lines)
# to this path + "." + the worker's pid (README, "Grouped speculative decoding")
_TRACE = os.environ.get("UMBRA_SPEC_TRACE")
_GROUP = re.compile(r"g(\d+)-r\d+-")  # umbra.rollout.request.Request.request_id, then vLLM's suffixes


class GroupedSuffixProposer:
    """Proposes per-row drafts from the group replica; adapts the draft length per batch
    (Seer Alg. 1, ``_draft``; :class:`TokenBudgetProposer` overrides it)."""

    def __init__(self, vllm_config=None, gamma_max: int | None = None):
        if vllm_config is not None:  # inside an engine's worker process
            from umbra.speculative import vllm_cpu_fix

            vllm_cpu_fix.apply()
        spec = getattr(vllm_config, "speculative_config", None)
        self.gamma_max = gamma_max or (spec.num_speculative_tokens if spec else 8)
        self.replica = GroupReplica()
        self.stats = AcceptanceStats(self.gamma_max)
        self.cost = StepCost()
        self.input_batch = None  # vLLM's InputBatch: request ids by row (``bind``)
        self.last: dict = {}  # row key (request id, or (group, context length, last token)) -> draft length
        self.last_time: float | None = None
        self.last_drafts = 0
        self.last_context = 0.0  # the last call's rows' context tokens
        self.last_draft_context = 0.0  # its drafts' rows' context, summed per draft token
        self.rows_before: set = set()  # the request ids of the last call's rows
        self.steps = self.drafting_steps = 0  # calls since the last ``take_counters``

    def take_counters(self) -> dict[str, float]:
        """What Alg. 1 saw and chose since the last call: ``steps`` (with a registered group),
        ``drafting_steps`` (some row got a draft), its step-cost fit ``c0_s``, ``row_s``,
        ``context_token_s`` and ``draft_s`` (seconds per step, per row, per context token attended
        and per verified draft token), and ``accept_rate_1`` (first draft position)."""
        out = {"steps": float(self.steps), "drafting_steps": float(self.drafting_steps), "c0_s": self.cost.c0,
               "row_s": self.cost.c_row, "draft_s": self.cost.c_draft, "context_token_s": self.cost.c_ctx,
               "accept_rate_1": self.stats.rate[0]}
        self.steps = self.drafting_steps = 0
        return out

    def bind(self, input_batch) -> None:
        """Read rows' request ids from ``input_batch`` (the worker's ``model_runner.input_batch``)."""
        self.input_batch = input_batch

    def load_model(self, *args, **kwargs) -> None:
        """vLLM may call this on drafters; there is no draft model."""

    def _req_ids(self, rows: int) -> list | None:
        """The rows' request ids from the bound input batch, or None (unbound, or another shape)."""
        req_ids = getattr(self.input_batch, "req_ids", None)
        return list(req_ids) if req_ids is not None and len(req_ids) == rows else None

    def _groups(self, rows: int, req_ids: list | None, num_tokens, token_ids_cpu) -> list:
        """Each row's group (None: unknown): from its request id, else by its prompt."""
        if req_ids is not None:
            groups = []
            for rid in req_ids:
                m = _GROUP.match(rid)
                groups.append(int(m.group(1)) if m else None)
            if all(g is not None for g in groups):
                return groups
        return [self.replica.group_of(token_ids_cpu[i, :int(num_tokens[i])]) for i in range(rows)]

    def propose(self, sampled_token_ids, num_tokens_no_spec, token_ids_cpu, **kwargs) -> list[list[int]]:
        """Drafts per row (``[rows][<= gamma]``); ``[]`` for rows without a usable match.

        vLLM passes the sampled token ids per row (empty for a row still prefilling), the
        context lengths per row, and the token buffer ``[max_rows, max_len]``.
        """
        now = time.perf_counter()
        rows = len(sampled_token_ids)
        drafts: list[list[int]] = [[] for _ in range(rows)]
        if not self.replica:  # nothing to draft from (no group registered): no per-row work
            self.last.clear()
            self.last_time, self.rows_before = None, set()
            return drafts
        req_ids = self._req_ids(rows)
        groups = None  # per row, found only when needed (a draft, or a verdict without request ids)
        # Alg. 1's step cost, measured on this engine: the time since the last call started is
        # the step that verified last call's drafts plus this proposer's own work for it. Only
        # decode steps of the same requests are fitted (a request that entered was prefilled
        # in it; prefill tokens cost less each than decode ones).
        if self.last_time is not None and req_ids is not None and self.rows_before.issuperset(req_ids):
            self.cost.observe(len(self.rows_before), self.last_drafts, now - self.last_time,
                              self.last_context, self.last_draft_context)
        if self.last:  # verdicts on last step's drafts
            if req_ids is None:
                groups = self._groups(rows, None, num_tokens_no_spec, token_ids_cpu)
            for i in range(rows):
                sampled = len(sampled_token_ids[i])
                if not sampled:
                    continue
                if req_ids is not None:
                    key = req_ids[i]
                else:
                    n = int(num_tokens_no_spec[i]) - sampled
                    key = (groups[i], n, int(token_ids_cpu[i, n - 1])) if n > 0 else None
                prev = self.last.get(key) if key is not None else None
                if prev:
                    self._verdict(prev, sampled - 1)
            self.last.clear()  # rows that ended mid-draft leave stale entries
        context = [int(num_tokens_no_spec[i]) for i in range(rows)]
        drafts, gamma = self._draft(rows, req_ids, groups, sampled_token_ids, context, token_ids_cpu)
        self.steps += 1
        self.last_drafts = sum(len(d) for d in drafts)
        self.last_context = float(sum(context))
        self.last_draft_context = float(sum(len(d) * n for d, n in zip(drafts, context)))
        if _TRACE:
            with open(f"{_TRACE}.{os.getpid()}", "a") as fh:
                fh.write(json.dumps({"t": now, "rows": rows, "gamma": gamma, "drafted": self.last_drafts,
                                     "sampled": sum(len(x) for x in sampled_token_ids),
                                     "ctx": self.last_context, "c0": self.cost.c0,
                                     "c1": self.cost.c_row, "cctx": self.cost.c_ctx, "cd": self.cost.c_draft,
                                     "rate": [round(r, 3) for r in self.stats.rate[:4]]}) + "\n")
        self.last_time, self.rows_before = now, set(req_ids or ())
        self.drafting_steps += self.last_drafts > 0
        return drafts

    def _verdict(self, drafted, accepted: int) -> None:
        """The engine accepted the first ``accepted`` of a row's last draft (``self.last``'s value)."""
        self.stats.update(drafted, accepted)

    def _rows_to_draft(self, rows, req_ids, groups, sampled_token_ids, num_tokens, token_ids_cpu):
        """``(groups, rows)``: the rows' groups and the rows that may draft (sampled a token,
        group registered)."""
        if groups is None:
            groups = self._groups(rows, req_ids, num_tokens, token_ids_cpu)
        return groups, [i for i in range(rows) if len(sampled_token_ids[i]) and groups[i] is not None
                        and groups[i] in self.replica]

    def _context(self, i: int, num_tokens, token_ids_cpu) -> list[int]:
        """Row ``i``'s last ``max_match`` context tokens."""
        n = int(num_tokens[i])
        return token_ids_cpu[i, max(0, n - self.replica.max_match):n].tolist()

    @staticmethod
    def _key(i: int, req_ids, groups, num_tokens, ctx):
        """Row ``i``'s key in ``self.last``: its request id, else (group, context length, last token)."""
        return req_ids[i] if req_ids is not None else (groups[i], int(num_tokens[i]), ctx[-1])

    def _draft(self, rows, req_ids, groups, sampled_token_ids, num_tokens, token_ids_cpu):
        """Seer Alg. 1: one draft length for the batch (``choose_draft_length``), each row's
        draft from its group's suffix index up to it; records ``self.last``. Returns
        ``(drafts, gamma)``."""
        drafts: list[list[int]] = [[] for _ in range(rows)]
        gamma = choose_draft_length(rows, self.stats, self.cost.at(sum(num_tokens)), self.gamma_max)
        if gamma:  # speculation off costs a cost-model update and the rows' context lengths per step
            groups, ok = self._rows_to_draft(rows, req_ids, groups, sampled_token_ids, num_tokens, token_ids_cpu)
            for i in ok:
                ctx = self._context(i, num_tokens, token_ids_cpu)
                draft = self.replica.suffix_index(groups[i]).propose(ctx, gamma, MIN_MATCH)
                if draft:
                    self.last[self._key(i, req_ids, groups, num_tokens, ctx)] = len(draft)
                    drafts[i] = draft
        return drafts, gamma


class TokenBudgetProposer(GroupedSuffixProposer):
    """Grouped drafts under the per-token budget (ours, ``umbra.speculative.draft_budget``):
    each row drafts as far as its group's suffix-count support says a token pays, judged
    against the step cost measured on this engine; the confidence is calibrated on the
    engine's verdicts.

    The step-cost fit takes ``c0`` and ``c_row`` from steps without drafts only, and this
    proposer would draft on nearly every step: so it drafts nothing until 8 such steps were
    seen, and then nothing on every ``PLAIN_EVERY``-th step (ours; without them the fit froze
    at its first values and ``c_draft`` took up the error)."""

    PLAIN_EVERY = 8

    def __init__(self, vllm_config=None, gamma_max: int | None = None):
        super().__init__(vllm_config, gamma_max)
        self.confidence = DraftConfidence()
        self.since_plain = 0  # steps since the last one without drafts

    def _verdict(self, bins, accepted: int) -> None:
        self.stats.update(len(bins), accepted)
        self.confidence.update(bins, accepted)

    def _draft(self, rows, req_ids, groups, sampled_token_ids, num_tokens, token_ids_cpu):
        drafts: list[list[int]] = [[] for _ in range(rows)]
        self.since_plain += 1
        if self.cost.n < 8 or self.since_plain >= self.PLAIN_EVERY:
            self.since_plain = 0
            return drafts, 0
        context = sum(num_tokens)
        c_step = self.cost.seconds(rows, 0, context)
        c_token = self.cost.draft_token_seconds(context / max(rows, 1))
        if c_step <= rows * c_token:  # even a sure draft token cannot pay: no per-row work
            return drafts, 0
        groups, ok = self._rows_to_draft(rows, req_ids, groups, sampled_token_ids, num_tokens, token_ids_cpu)
        scored, chains = [], []
        for i in ok:
            ctx = self._context(i, num_tokens, token_ids_cpu)
            cand = self.replica.suffix_index(groups[i]).propose_scored(ctx, self.gamma_max, MIN_MATCH)
            bins = [self.confidence.bin(agree, total) for _, agree, total in cand]
            scored.append((i, ctx, cand, bins))
            chains.append(chain([self.confidence.rate(b) for b in bins]))
        lengths = allocate(chains, rows, c_step, c_token, self.gamma_max)
        for (i, ctx, cand, bins), g in zip(scored, lengths):
            if g:
                self.last[self._key(i, req_ids, groups, num_tokens, ctx)] = bins[:g]
                drafts[i] = [tok for tok, _, _ in cand[:g]]
        return drafts, max(lengths, default=0)


class NullProposer:
    """Proposes nothing, ever: an engine with it runs vLLM's speculative path with no drafts
    (``umbra bench spec-cost`` measures what that path costs by itself)."""

    def __init__(self, vllm_config=None):
        pass

    def load_model(self, *args, **kwargs) -> None:
        """No draft model."""

    def propose(self, sampled_token_ids, *args, **kwargs) -> list[list[int]]:
        return [[] for _ in sampled_token_ids]


class FixedDraftProposer:
    """Drafts exactly ``num_speculative_tokens`` tokens for every row that sampled one, all of
    them token 0 (which the target almost never samples, so nearly every draft is rejected and
    each step still yields one token per row). ``umbra bench spec-cost`` times engines with it
    to measure what verifying a draft token costs, accepted or not."""

    def __init__(self, vllm_config=None):
        spec = getattr(vllm_config, "speculative_config", None)
        self.gamma = spec.num_speculative_tokens if spec else 1

    def load_model(self, *args, **kwargs) -> None:
        """No draft model."""

    def propose(self, sampled_token_ids, *args, **kwargs) -> list[list[int]]:
        return [[0] * self.gamma if len(s) else [] for s in sampled_token_ids]
