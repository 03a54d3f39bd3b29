"""The trainer group (slime's "training" part): trains on rollout batches and owns the
weight sync to the rollout instances.

Today one Ray actor (:class:`umbra.training.trainer.GRPOTrainer`) holds the policy, the
reference model and AdamW; the driver talks to it only through this class.
"""
from __future__ import annotations

import logging

from umbra.training.weight_sync import push_weights

log = logging.getLogger(__name__)


class TrainerGroup:
    """``policy_version`` counts optimizer updates (0 = the initial model)."""

    def __init__(self, actor):
        self.actor = actor
        self.policy_version = 0

    @classmethod
    def start(cls, model_path: str, learning_rate: float, kl_coef: float, clip_eps: float, minibatches: int,
              seed: int, num_cpus: float = 1.0) -> "TrainerGroup":
        """Start the trainer actor; returns once its model is loaded."""
        import ray

        from umbra.training.trainer import GRPOTrainer

        actor = ray.remote(GRPOTrainer).options(num_cpus=num_cpus).remote(
            model_path, learning_rate, kl_coef, clip_eps, minibatches, seed)
        ray.get(actor.__ray_ready__.remote())
        return cls(actor)

    def train(self, batch) -> dict[str, float]:
        """One GRPO update on ``batch`` (a RolloutBatch whose samples carry advantages);
        returns the ``train/*`` metrics. Raises ValueError if a sample has no advantage."""
        import ray

        if any(s.advantage is None for s in batch.samples):
            raise ValueError("every sample needs an advantage before training")
        out = ray.get(self.actor.train_step.remote([s.prompt_token_ids for s in batch.samples],
                                                   [s.response_token_ids for s in batch.samples],
                                                   [s.advantage for s in batch.samples]))
        self.policy_version = int(out.pop("policy_version"))
        return out

    def update_weights(self, manager, only: list[int] | None = None) -> float:
        """Push the current weights to ``manager``'s instances (all, or the indices ``only``);
        returns seconds taken (see ``umbra.training.weight_sync``)."""
        return push_weights(self.actor, manager, self.policy_version, only)

    def save_checkpoint(self, folder: str) -> None:
        """Write the trainer's state (model, AdamW, RNG) into ``folder``."""
        import ray

        ray.get(self.actor.save_checkpoint.remote(folder))

    def load_checkpoint(self, folder: str) -> int:
        """Restore the state :meth:`save_checkpoint` wrote; returns the policy version."""
        import ray

        self.policy_version = int(ray.get(self.actor.load_checkpoint.remote(folder)))
        return self.policy_version

    def shutdown(self) -> None:
        """Release the shared-memory weight files (best effort)."""
        import ray

        try:
            ray.get(self.actor.release_weights.remote(), timeout=60)
        except Exception as exc:  # noqa: BLE001 - a dead actor must not hide the run's error
            log.warning("trainer cleanup failed: %s", exc)
