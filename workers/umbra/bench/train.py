"""``umbra bench train``: one GRPO step of the trainer (``umbra.training.trainer``) on a fixed
synthetic batch, for a model, a number of ranks and a device; prints a table and writes JSON
(seconds per step, tokens/s, peak memory per rank, the step's loss and gradient norm).

Needs only torch and transformers (no Ray, no vLLM): ranks are plain processes
(``torch.multiprocessing``) joined by ``torch.distributed`` (gloo on CPU, NCCL on CUDA).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import resource
import socket
import sys
import tempfile
from pathlib import Path


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default="tiny", help="tiny, smollm2 or a model folder")
    p.add_argument("--ranks", type=int, default=1, help="trainer ranks (processes; one GPU each with --device cuda)")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--sequences", type=int, default=64)
    p.add_argument("--prompt-tokens", type=int, default=256)
    p.add_argument("--response-tokens", type=int, default=256)
    p.add_argument("--micro-tokens", type=int, default=1024,
                   help="token budget of one micro-batch (default: the run config's)")
    p.add_argument("--threads", type=int, default=None, help="torch threads per rank (default: cores / ranks)")
    p.add_argument("--kl-coef", type=float, default=0.01)
    p.add_argument("--steps", type=int, default=1, help="GRPO steps; the table shows the last")
    p.add_argument("--gradient-checkpointing", action="store_true")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", dest="json_path", default=None, help="write results here")


def synthetic_batch(sequences: int, prompt_tokens: int, response_tokens: int, vocab: int, seed: int):
    """Fixed prompts, responses (token ids in ``[3, vocab)``) and advantages 1 / -0.5 in turn."""
    rng = random.Random(seed)
    prompts = [[rng.randrange(3, vocab) for _ in range(prompt_tokens)] for _ in range(sequences)]
    responses = [[rng.randrange(3, vocab) for _ in range(response_tokens)] for _ in range(sequences)]
    return prompts, responses, [1.0 if i % 2 else -0.5 for i in range(sequences)]


def _peak_memory_bytes(device: str) -> int:
    if device.startswith("cuda"):
        import torch

        return int(torch.cuda.max_memory_allocated())
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB


def _rank(rank: int, args: argparse.Namespace, model_path: str, address: str, out_dir: str) -> None:
    from umbra.training.trainer import GRPOTrainer

    device = f"cuda:{rank}" if args.device == "cuda" else "cpu"
    vocab = json.loads((Path(model_path) / "config.json").read_text())["vocab_size"]
    trainer = GRPOTrainer(model_path, 1e-6, args.kl_coef, 0.2, 1, args.seed, rank=rank, world=args.ranks,
                          address=address, device=device, micro_tokens=args.micro_tokens,
                          gradient_checkpointing=args.gradient_checkpointing, threads=args.threads, pad_id=0)
    batch = synthetic_batch(args.sequences, args.prompt_tokens, args.response_tokens, vocab, args.seed)
    for _ in range(args.steps):
        out = trainer.train_step(*batch)
    result = {"rank": rank, "s_per_step": out["train/time_s"], "loss": out["train/loss"],
              "grad_norm": out["train/grad_norm"], "peak_memory_bytes": _peak_memory_bytes(device)}
    Path(out_dir, f"rank{rank}.json").write_text(json.dumps(result))
    trainer.close()


def _free_address() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


def measure(args: argparse.Namespace, model_path: str) -> dict:
    """Run the step on ``args.ranks`` ranks; returns the JSON record."""
    with tempfile.TemporaryDirectory() as out_dir:
        address = _free_address()
        if args.ranks == 1:
            _rank(0, args, model_path, address, out_dir)
        else:
            import torch.multiprocessing as mp

            mp.spawn(_rank, args=(args, model_path, address, out_dir), nprocs=args.ranks)
        ranks = [json.loads(Path(out_dir, f"rank{r}.json").read_text()) for r in range(args.ranks)]
    seconds = max(r["s_per_step"] for r in ranks)
    tokens = args.sequences * (args.prompt_tokens + args.response_tokens)
    return {"model": args.model, "ranks": args.ranks, "device": args.device, "threads_per_rank": args.threads or max(1, (os.cpu_count() or 1) // args.ranks),
            "sequences": args.sequences, "prompt_tokens": args.prompt_tokens,
            "response_tokens": args.response_tokens, "micro_tokens": args.micro_tokens,
            "gradient_checkpointing": args.gradient_checkpointing, "s_per_step": seconds,
            "tokens_per_s": tokens / seconds, "loss": ranks[0]["loss"], "grad_norm": ranks[0]["grad_norm"],
            "peak_memory_gib_per_rank": [r["peak_memory_bytes"] / 2**30 for r in ranks]}


def run(args: argparse.Namespace) -> int:
    """Run the benchmark; returns the exit code (2 on bad input)."""
    from umbra.models.registry import resolve_model

    for flag in ("ranks", "sequences", "prompt_tokens", "response_tokens", "micro_tokens", "steps"):
        if getattr(args, flag) < 1:
            print(f"umbra: --{flag.replace('_', '-')} must be at least 1", file=sys.stderr)
            return 2
    if args.threads is not None and args.threads < 1:
        print("umbra: --threads must be at least 1", file=sys.stderr)
        return 2
    model_path = str(resolve_model(args.model))
    if not (Path(model_path) / "config.json").exists():
        print(f"umbra: no model at {model_path} (run `umbra prepare-model {args.model}` for a named model)",
              file=sys.stderr)
        return 2
    if args.device == "cuda":
        import torch

        if torch.cuda.device_count() < args.ranks:
            print(f"umbra: --ranks {args.ranks} needs {args.ranks} GPUs; this machine has "
                  f"{torch.cuda.device_count()}", file=sys.stderr)
            return 2
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    record = measure(args, model_path)
    print(f"{'model':<12}{'ranks':>6}{'device':>8}{'s/step':>10}{'tok/s':>10}{'loss':>12}{'grad norm':>12}"
          f"  peak GiB/rank")
    print(f"{args.model[-12:]:<12}{record['ranks']:>6}{record['device']:>8}{record['s_per_step']:>10.2f}"
          f"{record['tokens_per_s']:>10.0f}{record['loss']:>12.5f}{record['grad_norm']:>12.4f}  "
          + ", ".join(f"{g:.2f}" for g in record["peak_memory_gib_per_rank"]))
    if args.json_path:
        Path(args.json_path).write_text(json.dumps(record, indent=2))
    print(json.dumps(record))
    return 0
