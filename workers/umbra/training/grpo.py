"""GRPO maths as pure torch functions: group advantages (veRL's ``adv_estimator`` names) and
the clipped-ratio policy loss.

Shapes: B sequences, T response tokens (right-padded, ``mask`` 1 on real tokens).
"""
from __future__ import annotations

from typing import Literal

import torch

from umbra.training.loss_agg import LossAggMode, agg_loss

AdvEstimator = Literal["grpo", "dr_grpo", "rloo"]


def group_advantages(rewards: torch.Tensor, estimator: AdvEstimator = "grpo", norm_adv_by_std: bool = True,
                     eps: float = 1e-6) -> torch.Tensor:
    """One advantage per response from the rewards of its group.

    - ``grpo`` (DeepSeekMath §4.1.2, veRL's ``compute_grpo_outcome_advantage``):
      ``(r - mean_g) / (std_g + eps)`` where ``std_g`` is the *sample* standard deviation
      (unbiased, divisor G - 1: ``torch.std``'s default, as veRL and TRL use); with
      ``norm_adv_by_std=False`` (veRL's ``norm_adv_by_std_in_grpo``) just ``r - mean_g``.
    - ``dr_grpo`` (Dr. GRPO, Liu et al. 2025): ``r - mean_g``, never divided by the std.
    - ``rloo`` (Ahmadian et al. 2024, veRL's ``compute_rloo_outcome_advantage``): ``r_i`` minus
      the mean of the *other* G - 1 rewards, ``= G / (G - 1) * (r_i - mean_g)``.

    ``norm_adv_by_std`` applies to ``grpo`` only.

    Args:
        rewards: ``[num_groups, group_size]`` float rewards.
    Returns:
        ``[num_groups, group_size]``; all zeros for a group whose rewards are equal.
    Raises:
        ValueError: ``rewards`` is not 2-D, a group has fewer than 2 members, or
            ``estimator`` is unknown.
    """
    if rewards.dim() != 2 or rewards.shape[1] < 2:
        raise ValueError(f"rewards must be [groups, G>=2], got {tuple(rewards.shape)}")
    size = rewards.shape[1]
    centred = rewards - rewards.mean(dim=1, keepdim=True)
    if estimator == "grpo":
        if not norm_adv_by_std:
            return centred
        return centred / (rewards.std(dim=1, keepdim=True, unbiased=True) + eps)
    if estimator == "dr_grpo":
        return centred
    if estimator == "rloo":
        return centred * (size / (size - 1))
    raise ValueError(f"unknown adv_estimator {estimator!r}: use grpo, dr_grpo or rloo")


def assign_advantages(batch, estimator: AdvEstimator = "grpo", norm_adv_by_std: bool = True) -> None:
    """Set every sample's ``advantage`` from the rewards of its group (:func:`group_advantages`).

    Raises ValueError if a sample has no reward.
    """
    if any(s.reward is None for s in batch.samples):
        raise ValueError("every sample needs a reward before its advantage")
    rewards = torch.tensor([s.reward for s in batch.samples], dtype=torch.float32)
    adv = group_advantages(rewards.view(batch.num_groups, batch.group_size), estimator, norm_adv_by_std).view(-1)
    for s, a in zip(batch.samples, adv.tolist()):
        s.advantage = a


def masked_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of ``x`` over positions where ``mask`` is 1 (token-level mean)."""
    return (x * mask).sum() / mask.sum().clamp_min(1.0)


def clip_binds(ratio: torch.Tensor, advantages: torch.Tensor, clip_eps: float) -> torch.Tensor:
    """1.0 where the PPO clip is active, i.e. the token gets no gradient: ``ratio > 1 + eps``
    with ``A > 0``, or ``ratio < 1 - eps`` with ``A < 0`` (``advantages`` broadcast to ``ratio``;
    veRL's ``pg_clipfrac`` counts the same tokens)."""
    high = (ratio > 1 + clip_eps) & (advantages > 0)
    low = (ratio < 1 - clip_eps) & (advantages < 0)
    return (high | low).float()


def grpo_loss(logprobs: torch.Tensor, old_logprobs: torch.Tensor, ref_logprobs: torch.Tensor | None,
              advantages: torch.Tensor, mask: torch.Tensor, clip_eps: float, kl_coef: float,
              loss_agg_mode: LossAggMode = "token-mean", horizon: int | None = None
              ) -> tuple[torch.Tensor, dict[str, float]]:
    """Clipped-ratio policy loss plus ``kl_coef`` x the k3 KL estimator to the reference, both
    aggregated over tokens by ``loss_agg_mode`` (see :func:`umbra.training.loss_agg.agg_loss`;
    veRL aggregates its KL loss the same way).

    Args:
        logprobs, old_logprobs, ref_logprobs: ``[B, T]`` per-token log-probs under
            the current, the rollout-time and the reference policy.
        advantages: ``[B]`` one advantage per sequence, broadcast over its tokens.
        mask: ``[B, T]`` 1.0 on response tokens.
        horizon: ``seq-mean-token-sum-norm``'s constant divisor (the run's ``max_tokens``).
    Returns:
        ``(loss, stats)`` with stats ``pg_loss``, ``kl`` and ``clip_frac`` (the token share
        where the clip binds, :func:`clip_binds`).
    """
    ratio = torch.exp(logprobs - old_logprobs)
    adv = advantages[:, None]
    surr = torch.minimum(ratio * adv, torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps) * adv)
    pg_loss = agg_loss(-surr, mask, loss_agg_mode, horizon)
    if ref_logprobs is not None:
        log_r = ref_logprobs - logprobs
        kl = agg_loss(torch.exp(log_r) - log_r - 1.0, mask, loss_agg_mode, horizon)  # k3: unbiased, >= 0
    else:
        kl = torch.zeros((), dtype=logprobs.dtype)
    loss = pg_loss + kl_coef * kl
    clip_frac = masked_mean(clip_binds(ratio.detach(), adv.expand_as(ratio), clip_eps), mask)
    return loss, {"pg_loss": float(pg_loss.detach()), "kl": float(kl.detach()), "clip_frac": float(clip_frac)}
