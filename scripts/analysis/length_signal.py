"""Does a response's own start tell whether it will run to ``max_tokens``? (analysis, ours)

The issue workload's tail is its clipped requests started late; a group's lengths do not tell
them apart (ICC 0.08), so a scheduler would need a per-request predictor. This samples the
workload's responses on one vLLM engine with each sampled token's log-probability and asks,
among the responses still running after ``k`` tokens, how well cheap signals of those ``k``
tokens separate the clipped ones: their mean log-probability (how sure the policy is), the last
32 tokens' mean, the share below -5, the lowest, repeated 4-grams and distinct tokens. It prints
each signal's AUC for "clipped" (0.5: no signal; the sign says which way) and its Spearman
correlation with the final length. ``--hidden`` adds a learned signal: a logistic regression
on the policy's hidden state after ``k`` tokens (the middle and last layers: the last
position's state and the mean over the ``k`` tokens), fitted on three quarters of the prompts
and scored on the rest, four folds.

    PYTHONPATH=workers VLLM_CPU_KVCACHE_SPACE=2 .venv/bin/python scripts/analysis/length_signal.py \\
        --data ../shared/data/gsm8k/test.jsonl --prompts 32 --max-tokens 512 --temperature 1.0 \\
        --json var/bench/length-signal.json     # --from var/bench/length-signal.json reuses samples
"""
from __future__ import annotations

import argparse
import json
import statistics


def load_prompts(args, n: int) -> tuple[str, list[list[int]]]:
    """The model's folder and the first ``n`` prompts' token ids, as `umbra bench rollout` builds them."""
    from transformers import AutoTokenizer

    from umbra.config import PROMPT_BUDGET
    from umbra.data.source import DataSource
    from umbra.models.prepare import model_folder

    path = str(model_folder(args.model))
    data = DataSource.from_dataset(args.data, AutoTokenizer.from_pretrained(path), PROMPT_BUDGET, n, 0)
    return path, [item.token_ids for item in data.items[:n]]


def sample(args) -> list[dict]:
    """``prompts`` x ``group_size`` responses with their sampled tokens' log-probabilities."""
    from vllm import LLM, SamplingParams

    path, prompts = load_prompts(args, args.prompts)
    # as the rollout engines run: no partial prefill (the CPU generator cannot rewind a seed)
    llm = LLM(model=path, dtype="float32", max_model_len=1024, max_num_seqs=128, enforce_eager=True, seed=0,
              enable_chunked_prefill=False, max_num_batched_tokens=4096, enable_prefix_caching=True)
    inputs = [{"prompt_token_ids": p} for p in prompts for _ in range(args.group_size)]
    params = [SamplingParams(temperature=args.temperature, max_tokens=args.max_tokens, logprobs=0,
                             seed=args.seed + g * 1000 + i)
              for g in range(len(prompts)) for i in range(args.group_size)]
    rows = []
    for n, out in enumerate(llm.generate(inputs, params)):
        c = out.outputs[0]
        rows.append({"group": n // args.group_size, "tokens": list(c.token_ids), "finish": c.finish_reason,
                     "logprobs": [next(iter(d.values())).logprob for d in c.logprobs]})
    return rows


def signals(row: dict, k: int) -> dict[str, float]:
    """The cheap signals of a response's first ``k`` tokens."""
    tokens, lps = row["tokens"][:k], row["logprobs"][:k]
    grams = [tuple(tokens[i:i + 4]) for i in range(len(tokens) - 3)]
    return {"mean logprob": statistics.fmean(lps), "last 32 logprob": statistics.fmean(lps[-32:]),
            "share < -5": sum(x < -5 for x in lps) / len(lps), "min logprob": min(lps),
            "repeated 4-grams": 1 - len(set(grams)) / max(1, len(grams)), "distinct tokens": len(set(tokens)) / len(tokens)}


def auc(scores: list[float], labels: list[bool]) -> float:
    """P(a positive's score > a negative's), ties half."""
    pos = [s for s, y in zip(scores, labels) if y]
    neg = [s for s, y in zip(scores, labels) if not y]
    if not pos or not neg:
        return float("nan")
    return sum((p > n) + 0.5 * (p == n) for p in pos for n in neg) / (len(pos) * len(neg))


def spearman(a: list[float], b: list[float]) -> float:
    def ranks(xs):
        order = sorted(range(len(xs)), key=xs.__getitem__)
        out = [0] * len(xs)
        for r, i in enumerate(order):
            out[i] = r
        return out
    return statistics.correlation(ranks(a), ranks(b))


def report(rows: list[dict], ks: list[int]) -> dict:
    lengths = [len(r["tokens"]) for r in rows]
    clipped = [r["finish"] == "length" for r in rows]
    print(f"{len(rows)} responses, mean length {statistics.fmean(lengths):.0f}, {sum(clipped)} clipped "
          f"({sum(clipped) / len(rows):.0%})")
    out = {}
    for k in ks:
        alive = [r for r in rows if len(r["tokens"]) > k]
        labels = [r["finish"] == "length" for r in alive]
        if len(alive) < 10 or all(labels) or not any(labels):
            continue
        feats = [signals(r, k) for r in alive]
        out[k] = {"running": len(alive), "clipped": sum(labels), "signals": {}}
        cells = []
        for name in feats[0]:
            s = [f[name] for f in feats]
            a = auc(s, labels)
            rho = spearman(s, [len(r["tokens"]) for r in alive])
            out[k]["signals"][name] = {"auc": a, "spearman": rho}
            cells.append(f"{name} {max(a, 1 - a):.2f}{'+' if a >= 0.5 else '-'} ({rho:+.2f})")
        print(f"after {k} tokens: {len(alive)} running, {sum(labels) / len(alive):.0%} of them clipped | "
              + " | ".join(cells))
    return out


def hidden_probe(rows: list[dict], args, ks: list[int]) -> None:
    """Held-out AUC of a logistic regression on the policy's hidden states (folds by prompt)."""
    import torch
    from transformers import AutoModelForCausalLM

    path, prompts = load_prompts(args, max(r["group"] for r in rows) + 1)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    for k in ks:
        alive = [r for r in rows if len(r["tokens"]) > k]
        feats: dict[int, list] = {}
        with torch.no_grad():
            for r in alive:
                states = model(torch.tensor([prompts[r["group"]] + r["tokens"][:k]]), output_hidden_states=True).hidden_states
                for layer in (len(states) // 2, len(states) - 1):
                    h = states[layer][0]
                    feats.setdefault(layer, []).append(torch.cat([h[-1], h[-k:].mean(0)]))
        y = torch.tensor([r["finish"] == "length" for r in alive], dtype=torch.float32)
        fold_of = torch.tensor([r["group"] % 4 for r in alive])
        for layer, rows_x in feats.items():
            x, aucs = torch.stack(rows_x), []
            for fold in range(4):
                test = fold_of == fold
                mu, sd = x[~test].mean(0), x[~test].std(0) + 1e-6
                xtr, xte = (x[~test] - mu) / sd, (x[test] - mu) / sd
                w = torch.zeros(x.shape[1] + 1, requires_grad=True)
                opt = torch.optim.LBFGS([w], max_iter=200)

                def loss():
                    opt.zero_grad()
                    out = torch.nn.functional.binary_cross_entropy_with_logits(xtr @ w[:-1] + w[-1], y[~test]) \
                        + (w[:-1] ** 2).sum() / len(xtr)
                    out.backward()
                    return out
                opt.step(loss)
                with torch.no_grad():
                    aucs.append(auc((xte @ w[:-1]).tolist(), [bool(v) for v in y[test]]))
            print(f"after {k} tokens, hidden layer {layer}: held-out AUC {statistics.fmean(aucs):.2f} "
                  f"(folds {', '.join(f'{a:.2f}' for a in aucs)})")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default="smollm2")
    p.add_argument("--data")
    p.add_argument("--prompts", type=int, default=32)
    p.add_argument("--group-size", type=int, default=8)
    p.add_argument("--max-tokens", type=int, default=512)
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--ks", default="32,64,128,192,256")
    p.add_argument("--json", dest="json_path", help="save the samples here")
    p.add_argument("--from", dest="from_path", help="reuse samples saved by --json")
    p.add_argument("--hidden", action="store_true", help="also fit a probe on the policy's hidden states")
    args = p.parse_args()
    if args.from_path:
        with open(args.from_path) as fh:
            rows = json.load(fh)
    else:
        if not args.data:
            p.error("--data is required unless --from is given")
        rows = sample(args)
        if args.json_path:
            with open(args.json_path, "w") as fh:
                json.dump(rows, fh)
    ks = [int(k) for k in args.ks.split(",")]
    report(rows, ks)
    if args.hidden:
        if not args.data:
            p.error("--hidden needs --data (the prompts)")
        hidden_probe(rows, args, ks)


if __name__ == "__main__":
    main()
