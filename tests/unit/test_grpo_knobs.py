"""The algorithm knobs against hand-computed values on tiny batches: adv_estimator (grpo with
the sample std, dr_grpo, rloo), loss_agg_mode, the clip_frac sign rule, log-probs at the
sampling temperature, and the trainer's micro-batch weighting per loss_agg_mode."""
import math

import pytest
import torch

from umbra.training.batch import pack, token_logprobs
from umbra.training.grpo import assign_advantages, clip_binds, group_advantages, grpo_loss
from umbra.training.loss_agg import agg_loss

# one group of four: mean 0.25, centred [0.75, -0.25, -0.25, -0.25]
REWARDS = torch.tensor([[1.0, 0.0, 0.0, 0.0]])


def test_grpo_divides_by_the_sample_std():
    # sample variance = (0.75^2 + 3 * 0.25^2) / (4 - 1) = 0.25 -> std 0.5 (population: 0.433)
    adv = group_advantages(REWARDS, "grpo", eps=0.0)
    assert adv[0].tolist() == pytest.approx([1.5, -0.5, -0.5, -0.5], abs=1e-6)


def test_grpo_without_std_and_dr_grpo_only_centre():
    expected = [0.75, -0.25, -0.25, -0.25]
    assert group_advantages(REWARDS, "grpo", norm_adv_by_std=False)[0].tolist() == pytest.approx(expected)
    assert group_advantages(REWARDS, "dr_grpo")[0].tolist() == pytest.approx(expected)
    assert group_advantages(REWARDS, "dr_grpo", norm_adv_by_std=True)[0].tolist() == pytest.approx(expected)


def test_rloo_subtracts_the_mean_of_the_other_responses():
    # 1 - mean(0, 0, 0) = 1; 0 - mean(1, 0, 0) = -1/3
    adv = group_advantages(torch.tensor([[1.0, 0.0, 0.0, 0.0], [2.0, 4.0, 0.0, 6.0]]), "rloo")
    assert adv[0].tolist() == pytest.approx([1.0, -1 / 3, -1 / 3, -1 / 3], abs=1e-6)
    assert adv[1].tolist() == pytest.approx([2 - 10 / 3, 4 - 8 / 3, 0 - 12 / 3, 6 - 6 / 3], abs=1e-6)


def test_unknown_estimator_is_refused():
    with pytest.raises(ValueError, match="adv_estimator"):
        group_advantages(REWARDS, "ppo")


def test_assign_advantages_takes_the_estimator():
    from umbra.rollout.batch import RolloutBatch, Sample
    from umbra.rollout.request import RequestStatus

    samples = [Sample(0, i, [1], [2], RequestStatus.COMPLETED, 0, [], reward=r) for i, r in enumerate([1.0, 0.0, 0.0])]
    assign_advantages(RolloutBatch(0, 3, samples, [], 0.0, 1.0), "rloo")
    assert [s.advantage for s in samples] == pytest.approx([1.0, -0.5, -0.5])


LOSS = torch.tensor([[1.0, 2.0, 3.0], [4.0, 9.0, 9.0]])
MASK = torch.tensor([[1.0, 1.0, 1.0], [1.0, 0.0, 0.0]])


@pytest.mark.parametrize("mode, expected", [
    ("token-mean", (1 + 2 + 3 + 4) / 4),
    ("seq-mean-token-mean", ((1 + 2 + 3) / 3 + 4 / 1) / 2),
    ("seq-mean-token-sum-norm", ((1 + 2 + 3) / 5 + 4 / 5) / 2),  # horizon 5
])
def test_loss_agg_modes(mode, expected):
    assert agg_loss(LOSS, MASK, mode, horizon=5).item() == pytest.approx(expected)


def test_loss_agg_refuses_unknown_mode_and_missing_horizon():
    with pytest.raises(ValueError, match="loss_agg_mode"):
        agg_loss(LOSS, MASK, "seq-mean-token-sum")
    with pytest.raises(ValueError, match="horizon"):
        agg_loss(LOSS, MASK, "seq-mean-token-sum-norm")


@pytest.mark.parametrize("mode, expected", [
    # ratio 1, no KL: the per-token loss is -A: [-1, -1, -1] and [2]
    ("token-mean", (-3 + 2) / 4),
    ("seq-mean-token-mean", (-1 + 2) / 2),
    ("seq-mean-token-sum-norm", (-3 / 4 + 2 / 4) / 2),  # horizon 4
])
def test_grpo_loss_aggregates_by_mode(mode, expected):
    logp = torch.full((2, 3), -1.0)
    loss, _ = grpo_loss(logp, logp.clone(), None, torch.tensor([1.0, -2.0]), MASK, 0.2, 0.0, mode, horizon=4)
    assert loss.item() == pytest.approx(expected)


def test_clip_frac_counts_only_tokens_where_the_clip_binds():
    ratio = torch.tensor([[1.5, 0.5, 1.0], [1.5, 0.5, 1.0]])
    adv = torch.tensor([[1.0], [-1.0]]).expand_as(ratio)
    # A > 0 binds above 1 + eps only; A < 0 below 1 - eps only
    assert clip_binds(ratio, adv, 0.2).tolist() == [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
    old = torch.zeros(2, 3)
    _, stats = grpo_loss(torch.log(ratio), old, None, torch.tensor([1.0, -1.0]), torch.ones(2, 3), 0.2, 0.0)
    assert stats["clip_frac"] == pytest.approx(2 / 6)  # the old |ratio - 1| > eps rule said 4 / 6


class _FixedLogits(torch.nn.Module):
    """A "model" whose logits are given (pure logic: the log-prob maths only); a fresh tensor
    per call, as a model's forward gives (``token_logprobs`` divides it in place)."""

    def __init__(self, logits):
        super().__init__()
        self.logits = logits

    def forward(self, input_ids, attention_mask):
        return type("Out", (), {"logits": self.logits.clone()})()


def test_logprobs_are_taken_at_the_sampling_temperature():
    batch = pack([[0]], [[2, 1]], pad_id=0)  # tokens 0, 2, 1: predicts 2 from position 0, 1 from 1
    logits = torch.tensor([[[2.0, 1.0, 0.0], [0.5, 3.0, -1.0], [0.0, 0.0, 0.0]]])
    logp, ent = token_logprobs(_FixedLogits(logits), batch, True, temperature=0.5)

    def by_hand(row, token, t):
        z = [x / t for x in row]
        return z[token] - math.log(sum(math.exp(v) for v in z))

    assert logp[0].tolist() == pytest.approx([by_hand([2.0, 1.0, 0.0], 2, 0.5), by_hand([0.5, 3.0, -1.0], 1, 0.5)],
                                             abs=1e-6)
    assert logp[0, 0].item() == pytest.approx(0 - math.log(math.exp(4) + math.exp(2) + 1))
    p = torch.softmax(torch.tensor([1.0, 6.0, -2.0]), -1)
    assert ent[0, 1].item() == pytest.approx(float(-(p * p.log()).sum()), rel=1e-5)
    at_one, _ = token_logprobs(_FixedLogits(logits), batch, False)
    assert at_one[0, 0].item() == pytest.approx(by_hand([2.0, 1.0, 0.0], 2, 1.0))


PROMPTS = [[1, 2, 3], [4, 5], [6, 7, 8, 9, 10], [11]]
RESPONSES = [[20, 21, 22, 23], [24], [25, 26], [27, 28, 29, 30, 31, 32]]


@pytest.mark.parametrize("mode", ["token-mean", "seq-mean-token-mean", "seq-mean-token-sum-norm"])
def test_trainer_micro_batches_add_up_to_the_batch_aggregate(tmp_path, mode):
    """The trainer's loss metric (lr 0: nothing moves) equals agg_loss over the whole batch,
    with one micro-batch per sequence as with all in one."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from umbra.training.trainer import GRPOTrainer

    torch.manual_seed(0)
    LlamaForCausalLM(LlamaConfig(vocab_size=48, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                                 num_attention_heads=2, num_key_value_heads=1)).save_pretrained(tmp_path)
    adv = [1.5, -0.5, 0.25, -1.0]
    losses = []
    for micro in (4096, 1):
        t = GRPOTrainer(str(tmp_path), 1e-30, 0.0, 0.2, 1, 0, pad_id=0, bf16=False, threads=1, micro_tokens=micro,
                        temperature=0.7, loss_agg_mode=mode, horizon=8)
        losses.append(t.train_step(PROMPTS, RESPONSES, adv)["train/loss"])
    # ratio 1 at the first step: the loss is -A per token
    b = pack(PROMPTS, RESPONSES, 0)
    expected = agg_loss(-torch.tensor(adv)[:, None].expand_as(b.response_mask), b.response_mask, mode, 8)
    assert losses == pytest.approx([expected.item()] * 2, rel=1e-5)


def test_logprobs_at_a_temperature_backpropagate_through_a_real_model():
    """The temperature divides the logits in place: autograd must still give the gradient of
    the out-of-place formula (a model whose output projection kept its output would fail here)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=40, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=32))
    batch = pack(PROMPTS, RESPONSES, pad_id=0)
    logp, _ = token_logprobs(model, batch, True, temperature=0.6)
    (logp * batch.response_mask).sum().backward()
    got = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    logits = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits[:, :-1] / 0.6
    want = torch.gather(logits, -1, batch.input_ids[:, 1:, None]).squeeze(-1) - torch.logsumexp(logits, -1)
    (want * batch.response_mask).sum().backward()
    assert torch.allclose(logp, want.detach(), atol=1e-6)
    for g, p in zip(got, model.parameters()):
        assert torch.allclose(g, p.grad, atol=1e-6)
