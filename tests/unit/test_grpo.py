import pytest
import torch

from umbra.training.batch import pack
from umbra.training.grpo import group_advantages, grpo_loss


def test_group_advantages_normalize_within_each_group():
    rewards = torch.tensor([[1.0, 0.0, 0.0, 1.0], [1.0, 1.0, 1.0, 1.0]])
    adv = group_advantages(rewards)
    assert torch.allclose(adv[0], torch.tensor([1.0, -1.0, -1.0, 1.0]), atol=1e-4)
    assert torch.equal(adv[1], torch.zeros(4))  # equal rewards carry no signal


def test_group_advantages_reject_bad_shapes():
    with pytest.raises(ValueError):
        group_advantages(torch.tensor([1.0, 0.0]))
    with pytest.raises(ValueError):
        group_advantages(torch.tensor([[1.0], [0.0]]))


def test_loss_is_clipped_and_kl_zero_at_reference():
    logp = torch.log(torch.tensor([[0.5, 0.5]]))
    old = logp - 1.0  # ratio e ~ 2.7, beyond 1 + eps
    mask = torch.ones(1, 2)
    loss, stats = grpo_loss(logp, old, logp.clone(), torch.tensor([1.0]), mask, clip_eps=0.2, kl_coef=0.1)
    assert loss.item() == pytest.approx(-1.2, abs=1e-5)  # min(2.7, 1.2) * A
    assert stats["kl"] == pytest.approx(0.0, abs=1e-7)
    assert stats["clip_frac"] == 1.0


def test_pack_masks_only_response_tokens():
    batch = pack([[5, 6, 7], [5]], [[8, 9], [8, 9, 10]], pad_id=0)
    assert batch.input_ids.tolist() == [[5, 6, 7, 8, 9], [5, 8, 9, 10, 0]]
    # response_mask[t] marks that token t+1 is a response token
    assert batch.response_mask.tolist() == [[0, 0, 1, 1], [1, 1, 1, 0]]


def test_stale_weight_folders_of_dead_trainers_are_removed(tmp_path, monkeypatch):
    from umbra.training import trainer

    monkeypatch.setattr(trainer, "_weights_root", lambda: tmp_path)
    dead, alive = tmp_path / "umbra-weights-999999999", tmp_path / f"umbra-weights-{__import__('os').getpid()}"
    dead.mkdir()
    alive.mkdir()
    trainer._remove_stale_weight_files()
    assert not dead.exists() and alive.exists()
