import pytest
import torch

from umbra.training.batch import pack
from umbra.training.grpo import assign_advantages, group_advantages, grpo_loss


def test_group_advantages_normalize_within_each_group():
    rewards = torch.tensor([[1.0, 0.0, 0.0, 1.0], [1.0, 1.0, 1.0, 1.0]])
    adv = group_advantages(rewards)
    # sample std of [1, 0, 0, 1]: sqrt(4 * 0.25 / 3) = 0.5774 -> +-0.5 / 0.5774
    assert torch.allclose(adv[0], torch.tensor([0.866, -0.866, -0.866, 0.866]), atol=1e-3)
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
    from umbra.training import weight_sync

    monkeypatch.setattr(weight_sync, "_root", lambda: tmp_path)
    dead, alive = tmp_path / "umbra-weights-999999999", tmp_path / f"umbra-weights-{__import__('os').getpid()}"
    dead.mkdir()
    alive.mkdir()
    weight_sync.remove_stale_shared_files()
    assert not dead.exists() and alive.exists()


def test_advantages_are_assigned_per_group_of_a_batch():
    """assign_advantages normalises within each group of a RolloutBatch, in sample order."""
    from umbra.rollout.batch import RolloutBatch, Sample
    from umbra.rollout.request import RequestStatus

    samples = [Sample(g, i, [1], [2], RequestStatus.COMPLETED, 0, [], reward=r)
               for g, rewards in enumerate([[1.0, 0.0], [0.5, 0.5]]) for i, r in enumerate(rewards)]
    batch = RolloutBatch(0, 2, samples, [], 0.0, 1.0)
    assign_advantages(batch)
    # sample std of [1, 0] is sqrt(0.5): +-0.5 / 0.7071
    assert [s.advantage for s in samples] == pytest.approx([0.7071, -0.7071, 0.0, 0.0], abs=1e-4)
    samples[0].reward = None
    with pytest.raises(ValueError):
        assign_advantages(batch)
