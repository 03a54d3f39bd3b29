"""A GRPO trainer (the tiny model, torch) restored from its checkpoint continues bit-for-bit.
Moved from tests/unit/test_checkpoint.py: it builds and trains a real model; the checkpoint
folder rules themselves stay unit tests there."""
import pytest

pytestmark = pytest.mark.integration


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
