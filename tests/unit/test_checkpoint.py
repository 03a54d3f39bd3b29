"""Checkpoint folders: only committed checkpoints count, the newest wins, the sampler
continues where it stopped, and a trainer restored from one continues bit-for-bit."""
import random

import pytest

from umbra.job.checkpoint import CheckpointDir, LoopState, sampler_state


def test_only_a_committed_checkpoint_is_latest(tmp_path):
    ck = CheckpointDir(tmp_path / "run-1")
    assert ck.latest() is None
    rng = random.Random(5)
    rng.random()
    folder = ck.begin(3)
    ck.commit(folder, LoopState(3, 4, sampler_state(rng)))
    ck.begin(5)  # a driver killed while saving: never committed
    got_folder, state = ck.latest()
    assert got_folder == folder and (state.iteration, state.policy_version) == (3, 4)
    restored = state.restore_sampler()
    assert [restored.random() for _ in range(3)] == [rng.random() for _ in range(3)]


def test_newer_checkpoint_replaces_the_old_one(tmp_path):
    ck = CheckpointDir(tmp_path)
    for it in (1, 3):
        ck.commit(ck.begin(it), LoopState(it, it + 1, sampler_state(random.Random(it))))
    assert ck.latest()[1].iteration == 3
    assert sorted(p.name for p in tmp_path.glob("it-*")) == ["it-000003"]


def test_a_broken_latest_pointer_reads_as_no_checkpoint(tmp_path):
    (tmp_path / "latest").write_text("it-000009")
    assert CheckpointDir(tmp_path).latest() is None


def test_restored_trainer_continues_exactly(tmp_path, tiny_model_path):
    from umbra.training.trainer import GRPOTrainer

    args = (tiny_model_path, 1e-2, 0.01, 0.2, 1, 0)
    prompts, responses, adv = [[1, 2, 3], [1, 2, 4]], [[5, 6, 7], [8, 9]], [1.0, -1.0]
    a = GRPOTrainer(*args)
    a.train_step(prompts, responses, adv)
    a.save_checkpoint(str(tmp_path))
    b = GRPOTrainer(*args)
    assert b.load_checkpoint(str(tmp_path)) == 1
    out_a, out_b = a.train_step(prompts, responses, adv), b.train_step(prompts, responses, adv)
    assert out_a["train/loss"] == pytest.approx(out_b["train/loss"], rel=1e-6)
    for (name, pa), pb in zip(a.model.named_parameters(), b.model.parameters()):
        assert (pa - pb).abs().max().item() < 1e-6, name  # optimizer moments were restored too
