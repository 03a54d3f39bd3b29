"""The trainer as a group of FSDP2 ranks (gloo, plain processes, a tiny float32 model built
here): two ranks give the single-rank full-batch gradient; the token spread and the
micro-batching; activation checkpointing; the trainer module imports without Ray and vLLM."""
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from umbra.training import shards

PROMPTS = [[1, 2, 3], [4, 5], [6, 7, 8, 9, 10], [11], [12, 13], [14, 15, 16, 17]]
RESPONSES = [[20, 21, 22, 23], [24], [25, 26], [27, 28, 29, 30, 31, 32], [33, 34, 35], [36]]
ADV = [1.5, -0.5, 0.25, -1.0, 0.75, -0.25]


def _tiny_model(folder):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=48, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=64)
    LlamaForCausalLM(cfg).save_pretrained(folder)
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    vocab = {f"t{i}": i for i in range(48)}  # the checkpoint's Hugging Face folder copies a tokenizer
    PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.WordLevel(vocab, unk_token="t0")),
                            pad_token="t0").save_pretrained(folder)


def _trainer(folder, **kw):
    from umbra.training.trainer import GRPOTrainer

    return GRPOTrainer(str(folder), 0.0, 0.05, 0.2, 1, 0, pad_id=0, bf16=False, max_grad_norm=1e9, threads=1, **kw)


def _grads(trainer) -> dict:
    out = {}
    for name, p in trainer.model.named_parameters():
        g = p.grad
        out[name] = (g.full_tensor() if hasattr(g, "full_tensor") else g).detach().clone()
    return out


def _rank(rank, folder, port, micro_tokens, result):
    t = _trainer(folder, rank=rank, world=2, address=f"127.0.0.1:{port}", micro_tokens=micro_tokens)
    out = t.train_step(PROMPTS, RESPONSES, ADV)
    grads = _grads(t)  # collectives: both ranks
    plan = t.plan([len(p) + len(r) for p, r in zip(PROMPTS, RESPONSES)])
    # the sharded checkpoint (torch.distributed.checkpoint): a fresh trainer continues exactly
    t.opt.param_groups[0]["lr"] = 1e-2
    t.train_step(PROMPTS, RESPONSES, ADV)  # AdamW moments that matter
    folder = Path(result).parent / "ckpt"
    if rank == 0:
        folder.mkdir()
    torch.distributed.barrier()
    t.save_checkpoint(str(folder))
    t2 = _trainer(Path(result).parent / "m", rank=rank, world=2, address="unused", micro_tokens=micro_tokens)
    t2.opt.param_groups[0]["lr"] = 1e-2
    restored = t2.load_checkpoint(str(folder))
    a, b = t.train_step(PROMPTS, RESPONSES, ADV), t2.train_step(PROMPTS, RESPONSES, ADV)
    same = all(torch.equal(p.full_tensor(), q.full_tensor())
               for p, q in zip(t.model.parameters(), t2.model.parameters()))
    if rank == 0:
        torch.save({"grads": grads, "out": out, "plan": plan, "restored": restored, "same": same,
                    "losses": (a["train/loss"], b["train/loss"])}, result)
    t.close()


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("micro_tokens", [9, 40])
def test_two_ranks_give_the_single_rank_full_batch_gradient(tmp_path, micro_tokens):
    import torch.multiprocessing as mp

    _tiny_model(tmp_path / "m")
    single = _trainer(tmp_path / "m", micro_tokens=10_000)  # the whole batch in one micro-batch
    out1 = single.train_step(PROMPTS, RESPONSES, ADV)
    want = _grads(single)
    mp.spawn(_rank, args=(str(tmp_path / "m"), _free_port(), micro_tokens, str(tmp_path / "r.pt")), nprocs=2)
    # a checkpoint of 2 ranks is refused by 1 rank, with the reason
    with pytest.raises(ValueError, match="written by 2 trainer rank"):
        single.load_checkpoint(str(tmp_path / "ckpt"))
    got = torch.load(tmp_path / "r.pt", weights_only=False)
    assert set(got["grads"]) == set(want)
    for name, g in want.items():
        assert g.abs().sum() > 0, name
        rel = (got["grads"][name] - g).norm() / g.norm()
        assert rel < 1e-5, (name, float(rel))
    assert got["out"]["train/loss"] == pytest.approx(out1["train/loss"], rel=1e-5)
    assert got["out"]["train/grad_norm"] == pytest.approx(out1["train/grad_norm"], rel=1e-5)
    assert got["out"]["train/tokens"] == out1["train/tokens"] == sum(len(r) for r in RESPONSES)
    assert got["restored"] == 2 and got["same"], "the sharded checkpoint did not restore exactly"
    assert got["losses"][0] == got["losses"][1]
    if micro_tokens == 9:
        assert len(got["plan"][0]) > 1  # several micro-batches on rank 0


def test_spread_balances_tokens_and_micro_batches_respect_the_budget():
    lengths = [10, 3, 7, 7, 2, 9, 1]
    parts = shards.spread(lengths, 2)
    assert sorted(i for p in parts for i in p) == list(range(7))
    loads = [sum(lengths[i] for i in p) for p in parts]
    assert abs(loads[0] - loads[1]) <= 1
    micro = shards.micro_batches(list(range(7)), lengths, 14)
    assert [i for m in micro for i in m] == list(range(7))
    assert all(len(m) * max(lengths[i] for i in m) <= 14 or len(m) == 1 for m in micro)
    assert shards.micro_batches([0], [50], 14) == [[0]]  # longer than the budget: alone
    assert shards.split_evenly([[0, 1, 2, 3]], 3) == [[0], [1], [2, 3]]
    assert shards.split_evenly([[0]], 3) == [[0]]  # cannot split further: the caller pads


def test_trainer_module_imports_without_ray_and_vllm():
    code = ("import sys\n"
            "class Block:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name.split('.')[0] in ('ray', 'vllm'):\n"
            "            raise ImportError('blocked: ' + name)\n"
            "sys.meta_path.insert(0, Block())\n"
            "import umbra.training.trainer, umbra.training.shards, umbra.bench.train\n"
            "assert not any(m.split('.')[0] in ('ray', 'vllm') for m in sys.modules)\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_gradient_checkpointing_gives_the_same_gradient_and_recomputes_the_layers(tmp_path):
    """``gradient_checkpointing`` (activation checkpointing) trades compute for memory only: the
    same loss and gradient as without it, while each decoder layer's forward runs again in the
    backward pass."""
    _tiny_model(tmp_path / "m")
    runs = {}
    for on in (False, True):
        t = _trainer(tmp_path / "m", micro_tokens=10_000, gradient_checkpointing=on)
        calls = []
        # a pre-hook: the recompute stops early, once what the backward needs exists again
        t.model.model.layers[0].mlp.register_forward_pre_hook(lambda *a: calls.append(1))
        out = t.train_step(PROMPTS, RESPONSES, ADV)
        runs[on] = (out, _grads(t), len(calls), t.model.is_gradient_checkpointing)
    (plain, g0, n0, c0), (ckpt, g1, n1, c1) = runs[False], runs[True]
    assert not c0 and c1
    assert n1 > n0  # the layer's MLP ran again in backward
    assert ckpt["train/loss"] == pytest.approx(plain["train/loss"], rel=1e-6)
    for name, g in g0.items():
        assert (g1[name] - g).norm() <= 1e-6 * max(g.norm(), 1e-12), name
