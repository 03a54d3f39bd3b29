"""GPU step cost of verifying draft tokens (needs only torch: no transformers, Ray or vLLM).

What ``umbra bench spec-cost`` measures on a vLLM engine, measured here on a GPU: the time of one decode step of ``B`` rows that each verify ``g`` draft
tokens (a forward of ``B x (g + 1)`` tokens over a KV cache of ``--context`` tokens per row),
for ``g = 0..8`` and several ``B``. Random weights of two public shapes (no download):
SmolLM2-135M (the model the CPU benches run) and Qwen2.5-7B (a size RL recipes train).
bf16, the decoder written out in torch and captured in a CUDA graph per ``(B, g)`` (as vLLM
runs decode; a transformers forward measured 30-45 ms for every shape and size here, all of it
Python launching kernels), CUDA-event timing, median of ``--repeats``.

Writes ``{"fit": ..., "table": ...}`` per shape: the fit is Alg. 1's ``c0 + c_row B + c_draft
B g`` (least squares, as ``umbra bench spec-cost`` fits it) and the table the measured step
times, which ``umbra bench spec-bound --cost`` reads (it interpolates the table when present).
The step omits sampling and vLLM's scheduler, which add a fixed cost per step (so drafts pay
a little more than this says). Run from the repository root:

    python scripts/device/spec_cost_gpu.py --json out.json [--device cpu --tiny]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

SHAPES = {
    # SmolLM2-135M-Instruct's config.json (Llama architecture)
    "smollm2-135m": dict(arch="llama", vocab_size=49152, hidden_size=576, intermediate_size=1536,
                         num_hidden_layers=30, num_attention_heads=9, num_key_value_heads=3,
                         tie_word_embeddings=True, max_position_embeddings=8192),
    # Qwen2.5-7B's config.json
    "qwen2.5-7b": dict(arch="qwen2", vocab_size=152064, hidden_size=3584, intermediate_size=18944,
                       num_hidden_layers=28, num_attention_heads=28, num_key_value_heads=4,
                       tie_word_embeddings=False, max_position_embeddings=32768),
    "tiny": dict(arch="llama", vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                 num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=True,
                 max_position_embeddings=1024),
}


class Decoder:
    """One forward of a Llama/Qwen2-shaped decoder over a fixed KV cache, written out in torch
    (RMSNorm, rotary embedding, GQA attention through SDPA, SwiGLU MLP, LM head over every
    verified position) so that it can be captured in a CUDA graph, as vLLM captures its decode
    steps: what remains is the GPU's own time, not Python's kernel launches."""

    def __init__(self, shape: dict, device: str, dtype):
        import torch

        h, i, self.heads, self.kv_heads = (shape["hidden_size"], shape["intermediate_size"],
                                           shape["num_attention_heads"], shape["num_key_value_heads"])
        self.dim = h // self.heads
        w = lambda *s: torch.randn(*s, device=device, dtype=dtype) * 0.02  # noqa: E731
        self.layers = [dict(qkv=w(h, (self.heads + 2 * self.kv_heads) * self.dim), o=w(self.heads * self.dim, h),
                            gate_up=w(h, 2 * i), down=w(i, h), n1=w(h), n2=w(h))
                       for _ in range(shape["num_hidden_layers"])]
        self.embed, self.head = w(shape["vocab_size"], h), w(h, shape["vocab_size"])
        self.params = sum(x.numel() for layer in self.layers for x in layer.values()) + 2 * self.embed.numel()
        self.device, self.dtype = device, dtype

    def cache(self, batch: int, length: int):
        import torch

        return [(torch.randn(batch, self.kv_heads, length, self.dim, device=self.device, dtype=self.dtype),
                 torch.randn(batch, self.kv_heads, length, self.dim, device=self.device, dtype=self.dtype))
                for _ in self.layers]

    def forward(self, ids, cache, context: int):
        import torch
        import torch.nn.functional as F

        b, q = ids.shape
        x = self.embed[ids]
        mask = torch.ones(q, context + q, dtype=torch.bool, device=ids.device).tril(context)
        cos = torch.ones(q, self.dim, device=ids.device, dtype=self.dtype)
        for layer, (k_cache, v_cache) in zip(self.layers, cache):
            y = F.rms_norm(x, (x.shape[-1],), layer["n1"])
            qkv = (y @ layer["qkv"]).view(b, q, self.heads + 2 * self.kv_heads, self.dim).transpose(1, 2)
            qkv = qkv * cos + qkv.roll(self.dim // 2, -1) * cos  # rotary embedding's elementwise cost
            xq, xk, xv = qkv.split([self.heads, self.kv_heads, self.kv_heads], dim=1)
            k_cache[:, :, context:context + q] = xk
            v_cache[:, :, context:context + q] = xv
            a = F.scaled_dot_product_attention(xq, k_cache[:, :, :context + q], v_cache[:, :, :context + q],
                                               attn_mask=mask, enable_gqa=True)
            x = x + a.transpose(1, 2).reshape(b, q, -1) @ layer["o"]
            y = F.rms_norm(x, (x.shape[-1],), layer["n2"])
            gate, up = (y @ layer["gate_up"]).chunk(2, -1)
            x = x + (F.silu(gate) * up) @ layer["down"]
        return F.rms_norm(x, (x.shape[-1],)) @ self.head  # logits of every verified position


def time_steps(model: Decoder, batches: list[int], gammas: list[int], context: int, repeats: int,
               graphs: bool) -> dict:
    """``{B: {g: seconds}}``: one forward of ``B x (g + 1)`` tokens over a ``context``-token cache."""
    import torch

    table: dict = {}
    for b in batches:
        table[b] = {}
        cache = model.cache(b, context + max(gammas) + 1)
        for g in gammas:
            ids = torch.randint(0, model.embed.shape[0], (b, g + 1), device=model.device)
            step = lambda: model.forward(ids, cache, context)  # noqa: E731
            with torch.no_grad():
                if graphs:
                    side = torch.cuda.Stream()
                    side.wait_stream(torch.cuda.current_stream())
                    with torch.cuda.stream(side):
                        for _ in range(2):
                            step()
                    torch.cuda.current_stream().wait_stream(side)
                    graph = torch.cuda.CUDAGraph()
                    with torch.cuda.graph(graph):
                        step()
                    step = graph.replay
                times = []
                for rep in range(repeats + 2):  # two warm-ups
                    if model.device == "cuda":
                        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                        start.record()
                        step()
                        end.record()
                        torch.cuda.synchronize()
                        dt = start.elapsed_time(end) / 1000
                    else:
                        t0 = time.perf_counter()
                        step()
                        dt = time.perf_counter() - t0
                    if rep >= 2:
                        times.append(dt)
            table[b][g] = statistics.median(times)
            del step
        del cache
        if model.device == "cuda":
            torch.cuda.empty_cache()
    return table


def fit(table: dict) -> dict:
    import numpy as np

    xs = [(1.0, b, b * g) for b, row in table.items() for g in row]
    ys = [row[g] for b, row in table.items() for g in row]
    (c0, c_row, c_draft), *_ = np.linalg.lstsq(np.array(xs), np.array(ys), rcond=None)
    return {"c0_s": float(c0), "row_s": float(c_row), "draft_s": float(c_draft)}


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--shapes", default="smollm2-135m,qwen2.5-7b")
    p.add_argument("--tiny", action="store_true", help="the toy shape only (a check of this script)")
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    p.add_argument("--batches", default="1,4,16,32,64,128")
    p.add_argument("--gammas", default="0,1,2,3,4,5,6,7,8")
    p.add_argument("--context", type=int, default=384)
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--json", default=None)
    a = p.parse_args()
    try:
        batches = [int(x) for x in a.batches.split(",")]
        gammas = [int(x) for x in a.gammas.split(",")]
        shapes = ["tiny"] if a.tiny else a.shapes.split(",")
    except ValueError:
        p.error("--batches and --gammas take comma-separated integers")
    if min(batches) < 1 or min(gammas) < 0 or 0 not in gammas or a.context < 1 or a.repeats < 1:
        p.error("--batches >= 1, --gammas >= 0 and holding 0 (a plain step), --context and --repeats >= 1")
    if any(s not in SHAPES for s in shapes) or (a.tiny and a.shapes != p.get_default("shapes")):
        p.error(f"--shapes takes some of {', '.join(k for k in SHAPES if k != 'tiny')} (--tiny alone for the toy)")
    if a.json and (os.path.isdir(a.json) or not os.path.isdir(os.path.dirname(os.path.abspath(a.json)))):
        p.error(f"--json: {a.json} is a folder or its folder does not exist")
    import torch

    if a.device == "cuda" and not torch.cuda.is_available():
        p.error("no CUDA device here: --device cpu (with --tiny) checks the script itself")

    dtype = torch.bfloat16 if a.device == "cuda" else torch.float32
    if a.device == "cuda":
        print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}", flush=True)
    out = {"config": vars(a), "shapes": {}}
    for name in shapes:
        t0 = time.time()
        torch.manual_seed(0)
        model = Decoder(SHAPES[name], a.device, dtype)
        params = model.params
        table = time_steps(model, batches, gammas, a.context, a.repeats, a.device == "cuda")
        del model
        if a.device == "cuda":
            torch.cuda.empty_cache()
        f = fit(table)
        out["shapes"][name] = {"params": params, "fit": f,
                               "table": {str(b): {str(g): s for g, s in row.items()} for b, row in table.items()}}
        print(f"\n{name}: {params / 1e6:.0f}M parameters, context {a.context}, {time.time() - t0:.0f} s")
        print("step ms  | " + " | ".join(f"g={g:<5}" for g in gammas))
        for b, row in table.items():
            print(f"B={b:<6} | " + " | ".join(f"{1000 * row[g]:7.2f}" for g in gammas))
        print(f"fit: {1000 * f['c0_s']:.2f} ms + {1000 * f['row_s']:.3f} ms/row + {1000 * f['draft_s']:.3f} ms/draft token;"
              f" a verified draft token costs {f['draft_s'] / f['row_s'] if f['row_s'] > 0 else float('nan'):.2f} of a row",
              flush=True)
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(out, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
