"""Run checkpoints on disk: the trainer's weights and optimizer plus the driver's loop state.

Layout under the run's checkpoint folder (``UMBRA_CHECKPOINT_DIR``, one per run; on a
multi-node cluster it must be storage every node sees)::

    it-000009/trainer.pt   model + optimizer state (one trainer rank; with several ranks
                           trainer-dcp/, trainer.json and rng-rank<r>.pt, see GRPOTrainer)
    it-000009/hf/          the policy as a Hugging Face model folder (the model export)
    it-000009/state.json   iteration, policy version, sampler state (written by the driver)
    latest                 name of the newest complete checkpoint folder

A checkpoint counts only once ``latest`` names it, and ``latest`` is replaced atomically
after every file of the checkpoint is written, so a driver killed or cancelled while saving
leaves the previous checkpoint in force (Resume loads that one; the half-written folder is
written anew, or removed by the next commit).
"""
from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class LoopState:
    """What the driver needs to continue after ``iteration`` (the last completed one)."""

    iteration: int
    policy_version: int
    sampler_state: list  # the data source's state (DataSource.state)


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
        # Older checkpoints beyond ``keep`` go, and so do half-written folders: saves that a
        # killed or cancelled attempt never finished (incomplete, or after this one).
        mine = _iteration(folder)
        found = sorted((n, p) for p in self.root.glob("it-*") if p.is_dir() and (n := _iteration(p)) is not None)
        older = [p for n, p in found if n < mine and (p / "state.json").exists()]
        stale = [p for n, p in found if n > mine or (n < mine and not (p / "state.json").exists())]
        for old in older[:max(0, len(older) - max(self.keep - 1, 0))] + stale:
            shutil.rmtree(old, ignore_errors=True)


def _iteration(folder: Path) -> int | None:
    """The iteration of a checkpoint folder ``it-000009`` (None for another name)."""
    digits = folder.name[3:]
    return int(digits) if folder.name.startswith("it-") and digits.isdigit() else None


class Checkpointer:
    """Saves a run's checkpoint every ``every`` iterations and after iteration ``last`` (the
    run's final one, as veRL saves at its last step: the trained model can be exported),
    and restores the latest one; ``every`` 0 saves none.

    A checkpoint is written only after its iteration's metrics were delivered: an undelivered
    batch would leave a gap in the metric history after a resume, so a due checkpoint waits
    for the next delivered iteration.
    """

    def __init__(self, folder: CheckpointDir | None, every: int, last: int | None = None):
        self.folder, self.every, self.last = folder, every, last
        self._due = False

    def restore(self, trainers, data) -> LoopState | None:
        """Load the latest checkpoint into ``trainers`` (a TrainerGroup) and ``data`` (the
        DataSource); returns its loop state, or None when there is none."""
        latest = self.folder.latest() if self.folder else None
        if latest is None:
            return None
        folder, state = latest
        trainers.load_checkpoint(str(folder))
        data.restore(state.sampler_state)
        return state

    def after_iteration(self, iteration: int, delivered: bool, trainers, data) -> Path | None:
        """Save the checkpoint after ``iteration`` if one is due and its metrics were
        ``delivered``; returns the folder written, or None."""
        self._due |= bool(self.folder and self.every and ((iteration + 1) % self.every == 0 or iteration == self.last))
        if not (self._due and delivered):
            return None
        folder = self.folder.begin(iteration)
        trainers.save_checkpoint(str(folder))
        self.folder.commit(folder, LoopState(iteration, trainers.policy_version, data.state()))
        self._due = False
        return folder
