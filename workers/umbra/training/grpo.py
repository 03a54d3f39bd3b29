"""GRPO maths as pure torch functions (Shao et al. 2024, DeepSeekMath §4.1).

Shapes: B sequences, T response tokens (right-padded, ``mask`` 1 on real tokens).
"""
from __future__ import annotations

import torch


def group_advantages(rewards: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """Group-normalized advantages ``(r - mean_g) / (std_g + eps)``.

    Args:
        rewards: ``[num_groups, group_size]`` float rewards.
    Returns:
        ``[num_groups, group_size]``; all zeros for a group whose rewards are equal.
    Raises:
        ValueError: ``rewards`` is not 2-D or a group has fewer than 2 members.
    """
    if rewards.dim() != 2 or rewards.shape[1] < 2:
        raise ValueError(f"rewards must be [groups, G>=2], got {tuple(rewards.shape)}")
    mean = rewards.mean(dim=1, keepdim=True)
    std = rewards.std(dim=1, keepdim=True, unbiased=False)
    return (rewards - mean) / (std + eps)


def assign_advantages(batch) -> None:
    """Set every sample's ``advantage`` from the rewards of its group (:func:`group_advantages`).

    Raises ValueError if a sample has no reward.
    """
    if any(s.reward is None for s in batch.samples):
        raise ValueError("every sample needs a reward before its advantage")
    rewards = torch.tensor([s.reward for s in batch.samples], dtype=torch.float32)
    adv = group_advantages(rewards.view(batch.num_groups, batch.group_size)).view(-1)
    for s, a in zip(batch.samples, adv.tolist()):
        s.advantage = a


def masked_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of ``x`` over positions where ``mask`` is 1 (token-level mean)."""
    return (x * mask).sum() / mask.sum().clamp_min(1.0)


def grpo_loss(logprobs: torch.Tensor, old_logprobs: torch.Tensor, ref_logprobs: torch.Tensor | None,
              advantages: torch.Tensor, mask: torch.Tensor, clip_eps: float, kl_coef: float
              ) -> tuple[torch.Tensor, dict[str, float]]:
    """Clipped-ratio policy loss plus ``kl_coef`` x the k3 KL estimator to the reference.

    Args:
        logprobs, old_logprobs, ref_logprobs: ``[B, T]`` per-token log-probs under
            the current, the rollout-time and the reference policy.
        advantages: ``[B]`` one advantage per sequence, broadcast over its tokens.
        mask: ``[B, T]`` 1.0 on response tokens.
    Returns:
        ``(loss, stats)`` with stats ``pg_loss``, ``kl``, ``clip_frac``.
    """
    ratio = torch.exp(logprobs - old_logprobs)
    adv = advantages[:, None]
    surr = torch.minimum(ratio * adv, torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps) * adv)
    pg_loss = -masked_mean(surr, mask)
    if ref_logprobs is not None:
        log_r = ref_logprobs - logprobs
        kl = masked_mean(torch.exp(log_r) - log_r - 1.0, mask)  # k3: unbiased, >= 0
    else:
        kl = torch.zeros((), dtype=logprobs.dtype)
    loss = pg_loss + kl_coef * kl
    clip_frac = masked_mean(((ratio - 1).abs() > clip_eps).float(), mask)
    return loss, {"pg_loss": float(pg_loss.detach()), "kl": float(kl.detach()), "clip_frac": float(clip_frac)}
