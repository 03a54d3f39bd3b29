"""How a per-token loss ``[B, T]`` becomes one number (veRL's ``loss_agg_mode`` names, as in
veRL's ``agg_loss`` in ``verl/trainer/ppo/core_algos.py``).

A micro-batch's aggregate is a mean over *units* (tokens or sequences); the trainer weights
each micro-batch by its share of the minibatch's units (:func:`agg_units`), so the sum over
micro-batches and ranks equals the aggregate over the whole minibatch.
"""
from __future__ import annotations

from typing import Literal

import torch

LossAggMode = Literal["token-mean", "seq-mean-token-mean", "seq-mean-token-sum-norm"]
LOSS_AGG_MODES = ("token-mean", "seq-mean-token-mean", "seq-mean-token-sum-norm")


def agg_loss(loss_mat: torch.Tensor, mask: torch.Tensor, mode: LossAggMode, horizon: int | None = None
             ) -> torch.Tensor:
    """Aggregate ``loss_mat`` ``[B, T]`` over the positions where ``mask`` ``[B, T]`` is 1.

    - ``token-mean`` (DAPO, Yu et al. 2025; veRL's default): the mean over every response
      token of the batch, so a long response weighs more than a short one.
    - ``seq-mean-token-mean`` (DeepSeekMath's GRPO objective): each sequence's token mean,
      then the mean over sequences.
    - ``seq-mean-token-sum-norm`` (Dr. GRPO, Liu et al. 2025): each sequence's token *sum*
      divided by the constant ``horizon`` (the generation budget, ``max_tokens``), then the
      mean over sequences. veRL divides the micro-batch's token sum by the padded response
      length (its ``max_response_length``) without the sequence mean; ours differs from it
      by the constant micro-batch size only.

    Raises ValueError for an unknown ``mode`` or a missing/invalid ``horizon``.
    """
    mask = mask.to(loss_mat.dtype)
    if mode == "token-mean":
        return (loss_mat * mask).sum() / mask.sum().clamp_min(1.0)
    seq_sum = (loss_mat * mask).sum(dim=-1)
    if mode == "seq-mean-token-mean":
        return (seq_sum / mask.sum(dim=-1).clamp_min(1.0)).mean()
    if mode == "seq-mean-token-sum-norm":
        if not horizon or horizon < 1:
            raise ValueError("seq-mean-token-sum-norm needs horizon >= 1 (the run's max_tokens)")
        return (seq_sum / float(horizon)).mean()
    raise ValueError(f"unknown loss_agg_mode {mode!r}: use one of {', '.join(LOSS_AGG_MODES)}")


def agg_units(mask: torch.Tensor, mode: LossAggMode) -> float:
    """How many units :func:`agg_loss` averages over in ``mask``: response tokens for
    ``token-mean``, sequences for the ``seq-mean-*`` modes."""
    if mode == "token-mean":
        return float(mask.sum())
    return float(mask.shape[0])
