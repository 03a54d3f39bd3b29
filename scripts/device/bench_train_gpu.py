"""GPU check of the trainer (needs only torch and transformers: no Ray, no vLLM).

Builds a random model of Qwen2 shape (~0.5B parameters, Qwen2.5-0.5B's config; no download)
and runs ``umbra bench train`` on it: one GRPO step, 1 rank, bf16 (FSDP2
MixedPrecisionPolicy), printing JSON. Run from the repository root:

    python scripts/device/bench_train_gpu.py [--tiny] [--device cpu] [--json out.json]

``--tiny`` uses a toy shape (a quick check of the script itself on a CPU machine).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "workers"))

QWEN2_05B = dict(vocab_size=151936, hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                 num_attention_heads=14, num_key_value_heads=2, max_position_embeddings=4096,
                 tie_word_embeddings=True, rope_theta=1000000.0)
TINY = dict(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=512, tie_word_embeddings=True)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--tiny", action="store_true")
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    p.add_argument("--sequences", type=int, default=64)
    p.add_argument("--json", default=None)
    a = p.parse_args()
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from umbra.bench import train as bench_train

    with tempfile.TemporaryDirectory() as folder:
        torch.manual_seed(0)
        model = Qwen2ForCausalLM(Qwen2Config(**(TINY if a.tiny else QWEN2_05B)))
        print(f"random Qwen2-shaped model: {sum(p.numel() for p in model.parameters()) / 1e6:.0f}M parameters",
              flush=True)
        model.save_pretrained(folder)
        del model
        argv = ["--model", folder, "--ranks", "1", "--device", a.device, "--sequences", str(a.sequences),
                "--micro-tokens", "8192", "--steps", "2"]
        if a.tiny:
            argv += ["--prompt-tokens", "16", "--response-tokens", "16", "--micro-tokens", "128"]
        if a.json:
            argv += ["--json", a.json]
        parser = argparse.ArgumentParser()
        bench_train.add_arguments(parser)
        return bench_train.run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
