"""Run checkpoints on disk: the trainer's weights and optimizer plus the driver's loop state.

Layout under the run's checkpoint folder (``UMBRA_CHECKPOINT_DIR``, one per run; on a
multi-node cluster it must be storage every node sees)::

    it-000009/trainer.pt   model + optimizer state (written by the trainer actor)
    it-000009/state.json   iteration, policy version, sampler state (written by the driver)
    latest                 name of the newest complete checkpoint folder

A checkpoint counts only once ``latest`` names it, and ``latest`` is replaced atomically,
so a driver killed while saving leaves the previous checkpoint in force.
"""
from __future__ import annotations

import json
import os
import random
import shutil
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class LoopState:
    """What the driver needs to continue after ``iteration`` (the last completed one)."""

    iteration: int
    policy_version: int
    sampler_state: list  # random.Random.getstate() as JSON lists

    def restore_sampler(self) -> random.Random:
        """A ``random.Random`` in the state it had after ``iteration``."""
        version, internal, gauss = self.sampler_state
        rng = random.Random()
        rng.setstate((version, tuple(internal), gauss))
        return rng


class CheckpointDir:
    """The checkpoints of one run under ``root``; keeps the newest ``keep``."""

    def __init__(self, root: str | os.PathLike, keep: int = 1):
        self.root = Path(root)
        self.keep = keep

    def latest(self) -> tuple[Path, LoopState] | None:
        """The newest complete checkpoint's folder and loop state, or None."""
        try:
            name = (self.root / "latest").read_text().strip()
            raw = json.loads((self.root / name / "state.json").read_text())
        except (OSError, ValueError):
            return None
        return self.root / name, LoopState(int(raw["iteration"]), int(raw["policy_version"]), raw["sampler_state"])

    def begin(self, iteration: int) -> Path:
        """A fresh, empty folder for the checkpoint after ``iteration`` (not yet in force)."""
        folder = self.root / f"it-{iteration:06d}"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        return folder

    def commit(self, folder: Path, state: LoopState) -> None:
        """Write ``state`` into ``folder`` and make it the latest checkpoint; drop older ones."""
        (folder / "state.json").write_text(json.dumps(
            {"iteration": state.iteration, "policy_version": state.policy_version,
             "sampler_state": state.sampler_state}))
        tmp = self.root / "latest.tmp"
        tmp.write_text(folder.name)
        os.replace(tmp, self.root / "latest")  # atomic: readers see the old or the new name
        kept = sorted(p for p in self.root.glob("it-*") if p.is_dir())
        for old in kept[:-self.keep] if self.keep else kept:
            if old != folder:
                shutil.rmtree(old, ignore_errors=True)


def sampler_state(rng: random.Random) -> list:
    """``rng``'s state as JSON-able lists (see :meth:`LoopState.restore_sampler`)."""
    version, internal, gauss = rng.getstate()
    return [version, list(internal), gauss]
