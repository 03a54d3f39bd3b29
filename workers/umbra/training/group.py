"""The trainer group (slime's "training" part): trains on rollout batches and owns the
weight sync to the rollout instances.

``ranks`` Ray actors (:class:`umbra.training.trainer.GRPOTrainer`, one per rank) form one
``torch.distributed`` group (gloo on CPU, NCCL with one GPU per rank), placed with a Ray
placement group; with more than one rank the policy, the reference model and AdamW are
FSDP2-sharded over them. The driver talks to them only through this class; every call
goes to all ranks, and a rank that dies fails the call naming the rank and its node.
"""
from __future__ import annotations

import logging
import time
from pathlib import Path

from umbra.training.weight_sync import push_weights, remove_stale_shared_files

log = logging.getLogger(__name__)

PLACEMENT_TIMEOUT_S = 120  # the cluster was checked to hold the group; this bounds a race


class TrainerRankError(RuntimeError):
    """A trainer rank died (its actor or its node was lost)."""


def placement_error(ranks: int, instances: int, resources: dict, num_cpus: float = 1.0,
                    instance_cpus: float = 0.5) -> str | None:
    """Why ``ranks`` trainer ranks plus ``instances`` rollout instances cannot be placed on a
    cluster with ``resources`` (``ray.cluster_resources()``), or None when they fit. On a
    GPU cluster each rank and each instance takes one GPU (ours)."""
    gpus = resources.get("GPU", 0)
    cpus = resources.get("CPU", 0)
    if gpus >= 1 and ranks + instances > gpus:
        return (f"trainer_ranks={ranks} needs {ranks} GPUs beside the {instances} rollout instances' "
                f"{instances}, but the cluster has {gpus:g} GPUs: lower trainer_ranks or rollout_instances")
    need = ranks * num_cpus + instances * instance_cpus
    if need > cpus:
        return (f"trainer_ranks={ranks} needs {ranks * num_cpus:g} CPUs beside the rollout instances' "
                f"{instances * instance_cpus:g}, but the cluster has {cpus:g} CPUs: lower trainer_ranks or "
                f"rollout_instances")
    return None


def _free_address() -> str:
    """``ip:port`` of a free TCP port on the node this runs on (rank 0's rendezvous)."""
    import socket

    import ray

    with socket.socket() as s:
        s.bind(("", 0))
        return f"{ray.util.get_node_ip_address()}:{s.getsockname()[1]}"


class TrainerGroup:
    """``policy_version`` counts optimizer updates (0 = the initial model); ``actor`` is rank
    0, ``actors`` every rank; ``nodes`` each rank's ``{"rank", "host", "pid"}``."""

    def __init__(self, actors, nodes=None, placement=None):
        self.actors = list(actors)
        self.actor = self.actors[0]
        self.nodes = nodes or [{"rank": r, "host": "?", "pid": 0} for r in range(len(self.actors))]
        self.placement = placement
        self.policy_version = 0
        self.last_sync_bytes = 0
        self._failed = False

    @classmethod
    def start(cls, model_path: str, learning_rate: float, kl_coef: float, clip_eps: float, minibatches: int,
              seed: int, num_cpus: float = 1.0, ranks: int = 1, micro_tokens: int | None = None,
              gradient_checkpointing: bool = False, algo: dict | None = None) -> "TrainerGroup":
        """Start ``ranks`` trainer actors in a placement group; returns once every rank has
        its (sharded) model. ``algo``: further GRPOTrainer keywords (``temperature``,
        ``loss_agg_mode``, ``horizon``). Raises RuntimeError when the group cannot be placed in time."""
        import ray
        from ray.util.placement_group import placement_group, remove_placement_group
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        from umbra.training.trainer import DEFAULT_MICRO_TOKENS, GRPOTrainer

        gpu = ray.cluster_resources().get("GPU", 0) >= 1
        bundle = {"CPU": num_cpus, **({"GPU": 1} if gpu else {})}
        pg = placement_group([dict(bundle) for _ in range(ranks)], strategy="PACK")
        try:
            ray.get(pg.ready(), timeout=PLACEMENT_TIMEOUT_S)
        except ray.exceptions.GetTimeoutError:
            remove_placement_group(pg)
            raise RuntimeError(f"the cluster could not place {ranks} trainer ranks ({bundle} each) within "
                               f"{PLACEMENT_TIMEOUT_S}s") from None

        def on(r):
            return PlacementGroupSchedulingStrategy(placement_group=pg, placement_group_bundle_index=r)

        address = ray.get(ray.remote(_free_address).options(num_cpus=0, scheduling_strategy=on(0)).remote())
        actors = [ray.remote(GRPOTrainer).options(num_cpus=num_cpus, num_gpus=1 if gpu else 0,
                                                  scheduling_strategy=on(r))
                  .remote(model_path, learning_rate, kl_coef, clip_eps, minibatches, seed, rank=r, world=ranks,
                          address=address, device="cuda:0" if gpu else "cpu",
                          micro_tokens=micro_tokens or DEFAULT_MICRO_TOKENS,
                          gradient_checkpointing=gradient_checkpointing, **(algo or {}))
                  for r in range(ranks)]
        group = cls(actors, placement=pg)
        try:
            group.nodes = group._all("node")
        except Exception:
            group.shutdown()  # a rank that died starting: stop the others, free the placement group
            raise
        log.info("trainer group: %d rank(s) on %s", ranks, ", ".join(n["host"] for n in group.nodes))
        return group

    def _gather(self, refs: list) -> list:
        """The results of one call per rank, in rank order; a rank whose actor died raises
        TrainerRankError at once (its peers would wait in a collective), naming it."""
        import ray

        index = {ref: r for r, ref in enumerate(refs)}
        pending = list(refs)
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            try:
                ray.get(ready[0])
            except Exception as exc:
                self._failed = True  # its peers may wait in a collective: do not call them again
                # A peer's collective fails as soon as a rank dies: name the dead rank if any.
                late, _ = ray.wait(pending, num_returns=len(pending), timeout=10) if pending else ([], [])
                for ref in [ready[0], *late]:
                    try:
                        ray.get(ref)
                    except ray.exceptions.RayActorError as died:
                        node = self.nodes[index[ref]]
                        raise TrainerRankError(f"trainer rank {node['rank']} on node {node['host']} died "
                                               f"(pid {node['pid']}): {str(died).splitlines()[0]}") from died
                    except Exception:  # noqa: BLE001 - a rank's own error: the first one is raised below
                        pass
                raise exc
        return ray.get(refs)

    def _all(self, method: str, *args) -> list:
        return self._gather([getattr(a, method).remote(*args) for a in self.actors])

    def train(self, batch) -> dict[str, float]:
        """One GRPO update on ``batch`` (a RolloutBatch whose samples carry advantages);
        returns the ``train/*`` metrics. Raises ValueError if a sample has no advantage."""
        if any(s.advantage is None for s in batch.samples):
            raise ValueError("every sample needs an advantage before training")
        out = self._all("train_step", [s.prompt_token_ids for s in batch.samples],
                        [s.response_token_ids for s in batch.samples],
                        [s.advantage for s in batch.samples])[0]
        self.policy_version = int(out.pop("policy_version"))
        return out

    def update_weights(self, manager, only: list[int] | None = None) -> float:
        """Push the current weights to ``manager``'s instances (all, or the indices ``only``);
        returns seconds taken and keeps the file's size in ``last_sync_bytes`` (see
        ``umbra.training.weight_sync``). Every rank joins the gather of the full state dict
        into rank 0's file, so a rank that dies there fails the sync at once, named."""
        t0 = time.time()
        path = self._all("save_weights")[0]
        push_weights(path, self.actor.weights_blob.remote, manager, self.policy_version, only)
        seconds = time.time() - t0
        self.last_sync_bytes = int(self._gather([self.actor.weights_bytes.remote()])[0])
        return seconds

    def prompt_logprobs(self, token_ids: list[int]) -> list[float]:
        """Rank 0's log-prob of each token after the first under the policy (all ranks run it)."""
        return self._all("prompt_logprobs", token_ids)[0]

    def save_checkpoint(self, folder: str) -> None:
        """Write the trainer's state (model, AdamW, RNG; sharded with several ranks) into ``folder``."""
        self._all("save_checkpoint", folder)

    def load_checkpoint(self, folder: str) -> int:
        """Restore the state :meth:`save_checkpoint` wrote; returns the policy version.
        Raises ValueError when another number of ranks wrote it."""
        from umbra.training.trainer import checkpoint_ranks

        written = checkpoint_ranks(folder)
        if written != len(self.actors):
            raise ValueError(f"the checkpoint was written by {written} trainer rank(s) and this run has "
                             f"trainer_ranks={len(self.actors)}: resume needs the same trainer_ranks ({written})")
        self.policy_version = int(self._all("load_checkpoint", folder)[0])
        return self.policy_version

    def shutdown(self) -> None:
        """Release the shared-memory weight files (best effort) and stop every rank; after a
        rank failure the ranks are not asked (they may wait in a collective): once killed,
        the files of those on this node are removed here."""
        import ray

        if not self._failed:
            try:
                ray.get([a.release_weights.remote() for a in self.actors], timeout=60)
            except Exception as exc:  # noqa: BLE001 - a dead actor must not hide the run's error
                log.warning("trainer cleanup failed: %s", exc)
        for a in self.actors:
            try:
                ray.kill(a)
            except Exception:  # noqa: BLE001 - already gone
                pass
        if self.placement is not None:
            from ray.util.placement_group import remove_placement_group

            try:
                remove_placement_group(self.placement)
            except Exception:  # noqa: BLE001
                pass
        if self._failed:
            self._remove_killed_ranks_files()

    def _remove_killed_ranks_files(self, wait_s: float = 10.0) -> None:
        """Once the killed ranks on this node have exited (up to ``wait_s``), remove the
        shared-memory weight folders they left (tmpfs holds them in RAM); those on other
        nodes go when the next trainer starts there (``remove_stale_shared_files``)."""
        import socket

        host = socket.gethostname()
        local = [n["pid"] for n in self.nodes if n["host"] == host and n["pid"]]
        deadline = time.time() + wait_s
        while any(Path(f"/proc/{pid}").exists() for pid in local) and time.time() < deadline:
            time.sleep(0.2)
        remove_stale_shared_files()
