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


VLLM_GREEDY = """
import json, sys
from vllm import LLM, SamplingParams
llm = LLM(model=sys.argv[1], dtype="float32", max_model_len=256, enforce_eager=True, seed=0)
out = llm.generate([{"prompt_token_ids": json.loads(sys.argv[2])}],
                   SamplingParams(temperature=0.0, max_tokens=int(sys.argv[3]), ignore_eos=True))
print("TOKENS", json.dumps(list(out[0].outputs[0].token_ids)))
"""


def test_checkpoint_holds_a_model_folder_transformers_and_vllm_serve(tmp_path, tiny_model_path):
    """The checkpoint's ``hf`` folder (what the run page and ``umbra export`` hand out) loads in
    transformers and in vLLM, and both decode the trainer's own greedy tokens."""
    import json
    import os
    import subprocess
    import sys

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from umbra.training.trainer import GRPOTrainer

    trainer = GRPOTrainer(tiny_model_path, 5e-2, 0.0, 0.2, 1, 0, bf16=False)
    trainer.train_step([[1, 2, 3], [1, 2, 4]], [[5, 6, 7], [8, 9]], [1.0, -1.0])  # weights differ from the base
    trainer.save_checkpoint(str(tmp_path))
    folder = tmp_path / "hf"
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= {p.name for p in folder.iterdir()}
    prompt, steps = AutoTokenizer.from_pretrained(folder)("user: 12 + 7 =\nassistant:")["input_ids"], 12

    def greedy(model):
        ids = list(prompt)
        with torch.no_grad():
            for _ in range(steps):
                ids.append(int(model(input_ids=torch.tensor([ids])).logits[0, -1].argmax()))
        return ids[len(prompt):]

    expected = greedy(trainer.model.eval())
    base = greedy(AutoModelForCausalLM.from_pretrained(tiny_model_path, torch_dtype=torch.float32))
    exported = AutoModelForCausalLM.from_pretrained(folder, torch_dtype=torch.float32)
    assert greedy(exported) == expected
    assert base != expected  # the folder holds the trained weights, not the initial ones
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_CPU_OMP_THREADS_BIND": "nobind"}
    proc = subprocess.run([sys.executable, "-c", VLLM_GREEDY, str(folder), json.dumps(prompt), str(steps)],
                          capture_output=True, text=True, timeout=600, env=env)
    line = [x for x in proc.stdout.splitlines() if x.startswith("TOKENS ")]
    assert proc.returncode == 0 and line, proc.stderr[-3000:]
    assert json.loads(line[0][len("TOKENS "):]) == expected
