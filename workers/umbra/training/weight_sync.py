"""The weight sync: how the trainer's weights reach the rollout engines (the instance actor's
``RolloutInstance.load_weights`` only passes them to its engine through ``collective_rpc``).

Three sides of one protocol:
- trainer side: the state dict as the engines need it (:func:`sync_state`), written as a
  safetensors file in shared memory (:func:`save_shared_file`) or serialized to bytes
  (:func:`to_bytes`);
- driver side: :func:`push_weights` asks every instance to load the file (instances on the
  trainer's node) and sends the bytes through Ray's object store to the others, once (the
  trainer group has its ranks write the file first, and fails the sync naming a rank that
  dies there);
- engine side: :class:`WeightLoadingExtension`, mixed into vLLM's worker class, loads either
  form with ``worker.reload_weights``.

Synchronous RL: the sync runs between rollouts, never while requests decode.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path


def sync_state(model) -> dict:
    """The state dict as sent to the engines: tied tensors cloned apart (safetensors refuses
    shared storage; vLLM needs ``lm_head.weight`` too, or keeps a stale head)."""
    return {k: v.detach().contiguous().clone() for k, v in model.state_dict().items()}


def full_state(model, sharded: bool) -> dict:
    """:func:`sync_state` of a policy that may be FSDP2-sharded: then every rank calls it, the
    full state dict is gathered to rank 0's CPU (``get_model_state_dict`` with
    ``full_state_dict=True, cpu_offload=True``, torch's distributed state-dict API) and the
    other ranks get ``{}``."""
    if not sharded:
        return sync_state(model)
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    full = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
    return {k: v.detach().contiguous().clone() for k, v in full.items()}


def to_bytes(state: dict) -> bytes:
    """``state`` as safetensors bytes (for instances on other nodes)."""
    from safetensors.torch import save

    return save(state)


def _root() -> Path:
    return Path("/dev/shm") if Path("/dev/shm").is_dir() else Path(tempfile.gettempdir())


def shared_folder(owner_pid: int | None = None) -> Path:
    """The shared-memory folder of the trainer process ``owner_pid`` (default: this one)."""
    return _root() / f"umbra-weights-{owner_pid or os.getpid()}"


def save_shared_file(state: dict, version: int) -> str:
    """Write ``state`` as ``v<version>.safetensors`` in this process's shared-memory folder
    (``/dev/shm`` when present) and return its path; instances on this node load it without
    a copy of the bytes passing through Ray or vLLM's RPC. Earlier versions' files are removed."""
    from safetensors.torch import save_file

    folder = shared_folder()
    folder.mkdir(exist_ok=True)
    path = folder / f"v{version}.safetensors"
    tmp = path.with_suffix(".tmp")
    save_file(state, str(tmp))
    tmp.rename(path)  # readers never see a partial file
    for old in folder.glob("v*.safetensors"):
        if old != path:
            old.unlink(missing_ok=True)
    return str(path)


def release_shared_files() -> None:
    """Remove this process's shared-memory weight files (tmpfs holds them in RAM)."""
    shutil.rmtree(shared_folder(), ignore_errors=True)


def remove_stale_shared_files() -> None:
    """Drop the weight folders of trainers that died without releasing them (killed jobs)."""
    for folder in _root().glob("umbra-weights-*"):
        pid = folder.name.rsplit("-", 1)[-1]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            shutil.rmtree(folder, ignore_errors=True)


def push_weights(path: str, blob, manager, version: int, only: list[int] | None = None) -> None:
    """Load the weights file ``path`` (:func:`save_shared_file`, written by the trainer) into
    the rollout instances of ``manager`` (all, or the indices ``only``) as policy ``version``.
    The path is tried first; instances that do not see the file (another node) get ``blob()``
    (the bytes, e.g. the object ref of the trainer's ``weights_blob``), made once for all of
    them."""
    targets = list(range(len(manager.instances))) if only is None else list(only)
    answers = manager.load_weights(path, version, targets)
    remote = [i for i, answer in zip(targets, answers) if answer is None]
    if remote:
        manager.load_weights(blob(), version, remote)
    if only is None:
        manager.policy_version = version


class WeightLoadingExtension:
    """Engine side: mixed into vLLM's worker class (``worker_extension_cls``); called through
    ``collective_rpc``. Weights arrive as safetensors bytes or a file path: a raw state dict
    sent through ``collective_rpc`` arrives mangled on the CPU build."""

    def umbra_load_weights(self, blob: bytes) -> str:
        """Load a safetensors-serialized state dict in place; return its sha256."""
        from safetensors.torch import load

        self.reload_weights(weights_iterator=iter(load(blob).items()))
        return hashlib.sha256(blob).hexdigest()

    def umbra_load_weights_file(self, path: str) -> str:
        """Load weights from a safetensors file on this node, tensor by tensor (memory-mapped)."""
        from safetensors import safe_open

        with safe_open(path, framework="pt") as f:
            self.reload_weights(weights_iterator=((k, f.get_tensor(k)) for k in f.keys()))
        return path
