"""Turn (prompt, response) token lists into padded tensors for the trainer."""
from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class TokenBatch:
    """``input_ids``/``attention_mask``: ``[B, L]``; ``response_mask``: ``[B, L-1]``,
    1 where position ``t+1`` is a response token (aligned with next-token logprobs)."""

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    response_mask: torch.Tensor


def pack(prompts: list[list[int]], responses: list[list[int]], pad_id: int) -> TokenBatch:
    """Right-pad ``prompt + response`` sequences. Raises ValueError on length mismatch."""
    if len(prompts) != len(responses):
        raise ValueError("prompts and responses differ in length")
    seqs = [p + r for p, r in zip(prompts, responses)]
    length = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), length), pad_id, dtype=torch.long)
    attn = torch.zeros((len(seqs), length), dtype=torch.long)
    resp = torch.zeros((len(seqs), length - 1), dtype=torch.float32)
    for b, (p, s) in enumerate(zip(prompts, seqs)):
        ids[b, : len(s)] = torch.tensor(s, dtype=torch.long)
        attn[b, : len(s)] = 1
        resp[b, len(p) - 1 : len(s) - 1] = 1.0
    return TokenBatch(ids, attn, resp)


def token_logprobs(model, batch: TokenBatch, with_entropy: bool = True, temperature: float = 1.0
                   ) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Next-token log-probs ``[B, L-1]`` under ``model`` and, if asked, entropies ``[B, L-1]``
    (a metric only: computed without a graph, so it costs no activation memory).

    The logits are divided by ``temperature`` first: the distribution the rollout sampled
    from, as veRL's actor (``logits.div_(temperature)``) and TRL's GRPOTrainer do."""
    logits = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits[:, :-1].float()
    if temperature != 1.0:
        # in place, as veRL does: a [B, L, vocab] float32 copy is the step's largest tensor
        # (805 MB for a 4,096-token micro-batch of a 49,152-token vocabulary); the output
        # projection does not keep its output for its backward, so this is safe for autograd
        logits = logits.div_(temperature)
    lse = torch.logsumexp(logits, dim=-1)
    logp = torch.gather(logits, -1, batch.input_ids[:, 1:, None]).squeeze(-1) - lse
    entropy = None
    if with_entropy:
        with torch.no_grad():  # one sequence at a time: two more [B, L, vocab] temporaries otherwise
            entropy = torch.stack([lse[i] - (torch.softmax(row, dim=-1) * row).sum(-1)
                                   for i, row in enumerate(logits)])
    return logp, entropy
