"""``umbra bench accept-ceiling``: how many tokens per step any drafter that proposes tokens
(not distributions) could get verified, on the policy's own responses (ours).

Seer's grouped drafts, suffix/n-gram drafts and history drafts all propose a token, not a
distribution; vLLM verifies such a draft token ``x`` with probability ``p(x)`` under the
policy's sampling distribution (``softmax(logits / T)``), so no such drafter is accepted at a
position more often than the distribution's largest probability ``p_max``. This samples G
responses per prompt with the policy as the rollout does (same prompts, chat template,
temperature, no top-k/top-p), records ``p_max`` at every generated position, and gives

- ``E(g)``: the mean tokens a step moves a row with ``g`` draft tokens, were every draft the
  most likely token: ``1 + sum_k prod_{j<=k} p_max(t + j)`` over positions ``t`` (a draft past
  the response's end is rejected). It keeps how the positions' ``p_max`` cluster (boilerplate
  runs), which a single per-position rate would average away.
- with ``--drafts``, the same for suffix drafters replayed on those responses
  (:mod:`umbra.bench.draft_agreement`: the group's suffix index, a global one, copying a sample);
- with ``--rounds R``, history drafts: the same prompts sampled R times (epochs, the policy held
  fixed) and the group drafter replayed round by round from the prompt's earlier responses
  (:func:`umbra.bench.draft_agreement.replay_rounds`);
- ``--engine vllm`` samples on one vLLM engine instead of transformers (:mod:`umbra.bench.pmax_vllm`);
- ``umbra bench spec-bound --accept-profile`` turns it into a rollout speed-up with the
  machine's step cost; ``--selective`` uses the ``p_max`` kept per position instead (a
  drafter that drafts only where a token pays).

An estimate, not a proof: ``p_max`` is read along the sampled path, where a drafter's
accepted tokens would have led along its own.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

from umbra.bench.token_chains import GAMMA_MAX, equivalent_rate, expected_tokens  # noqa: F401 (this bench's API)

MIN_TEMPERATURE = 0.01
TOP = 4  # --drafts: a draft token's probability is known when it is among the TOP most likely


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default="smollm2", help="tiny, smollm2 or a model folder")
    p.add_argument("--data", default="arith", help="'arith' or a GSM8K-style JSONL path")
    p.add_argument("--prompts", type=int, default=16)
    p.add_argument("--group-size", type=int, default=8)
    p.add_argument("--max-tokens", type=int, default=512)
    p.add_argument("--temperature", type=float, default=0.7)
    p.add_argument("--batch", type=int, default=64, help="sequences sampled at once")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", dest="json_path", default=None, help="write results here")
    p.add_argument("--drafts", action="store_true",
                   help="also replay suffix drafters (the group's, then every response's) on the sampled responses: "
                        "where they draft, how often their token is the most likely one, E(g) (draft_agreement)")
    p.add_argument("--engine", choices=("transformers", "vllm"), default="transformers",
                   help="sample with transformers (default) or on one vLLM engine, as the rollout does (its "
                        "distribution after temperature; many times faster on a CPU at long responses)")
    p.add_argument("--rounds", type=int, default=1,
                   help="sample every prompt's group this many times (epochs, the policy held fixed) and replay the "
                        "group's drafts round by round, each group starting with its prompt's earlier responses "
                        "(history drafts; implies --drafts)")


def sample_pmax(model, prompts: list[list[int]], group_size: int, max_tokens: int, temperature: float,
                batch: int, eos: set[int], pad: int, record: list | None = None) -> list[list[float]]:
    """``p_max`` per generated token of ``group_size`` sampled responses per prompt. With
    ``record``, each batch is appended to it as ``draft_agreement.replay`` reads it: rows
    ``(prompt index, sampled tokens, the distribution's TOP most likely (token, p) per position)``."""
    import torch

    rows = [p for p in prompts for _ in range(group_size)]
    out: list[list[float]] = []
    for b in range(0, len(rows), batch):
        part = rows[b:b + batch]
        width = max(len(p) for p in part)
        ids = torch.tensor([[pad] * (width - len(p)) + p for p in part])  # left padding
        mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in part])
        pos = (mask.cumsum(-1) - 1).clamp(min=0)
        alive = torch.ones(len(part), dtype=torch.bool)
        got: list[list[float]] = [[] for _ in part]
        rows_seen: list[tuple] = [((b + i) // group_size, [], []) for i in range(len(part))]
        with torch.inference_mode():
            res = model(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=True)
            for _ in range(max_tokens):
                probs = torch.softmax(res.logits[:, -1].float() / temperature, dim=-1)
                top = probs.max(dim=-1).values
                tok = torch.multinomial(probs, 1).squeeze(-1)
                if record is not None:
                    best = probs.topk(TOP, dim=-1)
                    toks, best_ids, best_ps = tok.tolist(), best.indices.tolist(), best.values.tolist()
                for i in torch.nonzero(alive).flatten().tolist():
                    got[i].append(float(top[i]))
                    if record is not None:
                        rows_seen[i][1].append(toks[i])
                        rows_seen[i][2].append(list(zip(best_ids[i], best_ps[i])))
                alive &= ~torch.tensor([int(t) in eos for t in tok])
                if not alive.any():
                    break
                mask = torch.cat([mask, torch.ones(len(part), 1, dtype=mask.dtype)], dim=-1)
                pos = mask.sum(-1, keepdim=True) - 1
                res = model(input_ids=tok[:, None], attention_mask=mask, position_ids=pos,
                            past_key_values=res.past_key_values, use_cache=True)
        out.extend(got)
        if record is not None:
            record.append(rows_seen)
        print(f"  sampled {min(b + batch, len(rows))}/{len(rows)} responses", flush=True)
    return out


def run(args: argparse.Namespace) -> int:
    """Print the table; returns the exit code (2 on bad input)."""
    # vLLM raises a temperature below 0.01 to 0.01: both engines measure the same only above it
    if not MIN_TEMPERATURE <= args.temperature <= 2.0:
        print(f"umbra bench accept-ceiling: --temperature must be within [{MIN_TEMPERATURE}, 2]", file=sys.stderr)
        return 2
    if not 0 <= args.seed < 2**32:
        print("umbra bench accept-ceiling: --seed must be within [0, 2**32)", file=sys.stderr)
        return 2
    if args.json_path and (os.path.isdir(args.json_path)
                           or not os.path.isdir(os.path.dirname(os.path.abspath(args.json_path)))):
        print(f"umbra bench accept-ceiling: cannot write --json {args.json_path}: not a file in an existing folder",
              file=sys.stderr)
        return 2
    if min(args.prompts, args.group_size, args.max_tokens, args.batch, args.rounds) < 1:
        print("umbra bench accept-ceiling: --prompts, --group-size, --max-tokens, --batch and --rounds must be >= 1",
              file=sys.stderr)
        return 2
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    from umbra.config import PROMPT_BUDGET
    from umbra.data.source import DataSource
    from umbra.models.prepare import model_folder

    try:
        path = str(model_folder(args.model))
        tok = AutoTokenizer.from_pretrained(path)
        data = DataSource.from_dataset(args.data, tok, PROMPT_BUDGET, args.prompts, args.seed)
        positions = AutoConfig.from_pretrained(path).max_position_embeddings
    except (ValueError, FileNotFoundError) as exc:  # FileNotFoundError: the --data file
        print(f"umbra bench accept-ceiling: {exc}", file=sys.stderr)
        return 2
    except OSError:  # transformers: neither a model folder nor a name it can fetch (offline)
        print(f"umbra bench accept-ceiling: --model {args.model}: not 'tiny', 'smollm2' or a model folder",
              file=sys.stderr)
        return 2
    prompts = [item.token_ids for item in data.items[: args.prompts]]
    longest = max(len(p) for p in prompts) + args.max_tokens
    if longest > positions:
        print(f"umbra bench accept-ceiling: the longest prompt plus --max-tokens is {longest} tokens, beyond the "
              f"model's {positions} positions", file=sys.stderr)
        return 2
    if args.engine == "transformers":
        torch.manual_seed(args.seed)
        model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
        eos = model.generation_config.eos_token_id
        eos = set(eos if isinstance(eos, list) else [eos]) if eos is not None else set()
        pad = tok.pad_token_id if tok.pad_token_id is not None else next(iter(eos), 0)
    llm = None
    print(f"model {args.model}: {len(prompts)} prompts x G={args.group_size}"
          + (f" x {args.rounds} rounds" if args.rounds > 1 else "")
          + f", max_tokens {args.max_tokens}, temperature {args.temperature}", flush=True)
    drafts = args.drafts or args.rounds > 1
    rounds: list[list] = []
    pmax = []
    try:
        for r in range(args.rounds):  # a round's groups are numbered by prompt, so history joins them
            record = [] if drafts else None
            if args.engine == "vllm":
                from umbra.bench.pmax_vllm import sample_pmax_vllm

                got, llm = sample_pmax_vllm(path, prompts, args.group_size, args.max_tokens, args.temperature,
                                            args.batch, args.seed + r, TOP, record, llm)
                pmax += got
            else:
                pmax += sample_pmax(model, prompts, args.group_size, args.max_tokens, args.temperature, args.batch,
                                    eos, pad, record)
            rounds.append(record)
    finally:
        if llm is not None:
            from umbra.bench.pmax_vllm import close

            close(llm)
    flat = sorted(p for row in pmax for p in row)
    e = expected_tokens(pmax)
    lengths = [len(r) for r in pmax]
    out = {"model": args.model, "engine": args.engine, "temperature": args.temperature, "responses": len(pmax),
           "tokens": len(flat), "mean_length": statistics.fmean(lengths),
           "clipped": sum(n >= args.max_tokens for n in lengths) / len(lengths),
           "pmax_mean": statistics.fmean(flat), "pmax_p50": flat[len(flat) // 2],
           "pmax_ge_0_9": sum(p >= 0.9 for p in flat) / len(flat),
           "expected_tokens": e, "equivalent_rate": {g: equivalent_rate(e[g], g) for g in range(1, len(e))},
           # every response's p_max by position: spec-bound --selective drafts only where it pays
           "pmax": [[round(p, 4) for p in row] for row in pmax]}
    print(f"{out['tokens']} tokens, mean response {out['mean_length']:.0f}, {100 * out['clipped']:.0f}% clipped")
    print(f"p_max: mean {out['pmax_mean']:.3f}, median {out['pmax_p50']:.3f}, "
          f"{100 * out['pmax_ge_0_9']:.0f}% of positions >= 0.9")
    print("draft length g | E(g) tokens/step (best token drafter) | equivalent per-position rate")
    for g in range(1, len(e)):
        print(f"{g:>14} | {e[g]:>36.2f} | {out['equivalent_rate'][g]:.3f}")
    if drafts:
        from umbra.bench.draft_agreement import print_rounds, print_table, replay, replay_rounds
        from umbra.speculative.history import PER_PROMPT

        out["drafts"] = replay(rounds[0], GAMMA_MAX)  # the first round: no history
        print_table(out["drafts"], e)
        if args.rounds > 1:
            for key, keep, what in (("rounds", PER_PROMPT, f"the {PER_PROMPT} most recent, as the draft server"),
                                    ("rounds_unbounded", None, "all of them")):
                out[key] = replay_rounds(rounds, GAMMA_MAX, keep)
                print(f"history drafts: each group starts with its prompt's earlier responses ({what} keeps)")
                print_rounds(out[key], e)
    if args.json_path:
        summary = json.dumps({k: v for k, v in out.items() if k != "pmax"}, indent=2)
        with open(args.json_path, "w") as fh:  # pmax on one compact line: ~7 bytes a position
            fh.write(summary[:-2] + ',\n  "pmax": ' + json.dumps(out["pmax"], separators=(",", ":")) + "\n}\n")
    return 0
