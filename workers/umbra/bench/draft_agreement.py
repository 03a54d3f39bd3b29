"""How good a suffix drafter's tokens are on the policy's own responses (ours; ``umbra bench
accept-ceiling --drafts``): where it drafts, how often its token is the policy's most likely
one, and the tokens a step would move were it to draft every token it has.

The responses are replayed in the order they were sampled, a batch's rows in lockstep (a
modelling choice: on an engine a group's requests run together, though under divided rollout
not always from the same step). At position ``t`` of a row, the index holds every row's
tokens before ``t`` (the row's own included, as the engine's replica does) and every
response of earlier batches. Drafters:

- ``group``: the row's group only (Seer's grouped drafts, :class:`GroupedSuffixProposer`);
- ``group+global``: the group's draft, else one from every response so far (ours: the
  fallback order; SuffixDecoding, arXiv 2411.04975, keeps such a global tree beside the
  request's own and takes the better-scored candidate);
- ``copy``: no index. Copying a fresh sample of the policy at the very same context is
  accepted with ``sum p^2`` (the chance two samples agree), not ``p_max``. A sibling's
  continuation is such a sample, so this is what copying one sibling could give; a majority
  over several siblings can do better (``sum p^2`` over the ``top`` tokens: a lower bound of it).

A draft token ``d`` at position ``t + k`` is accepted with ``p(d)`` under the sampling
distribution there, read along the sampled path (the approximation ``accept-ceiling`` makes
for ``p_max``, so a drafter's ``E(g)`` never exceeds the ceiling's); ``p(d)`` is known for the
distribution's ``top`` most likely tokens and counted 0 otherwise (a lower bound).
"""
from __future__ import annotations

from umbra.bench.token_chains import equivalent_rate, expected_tokens
from umbra.speculative.draft_budget import chain
from umbra.speculative.proposer import MIN_MATCH
from umbra.speculative.suffix_index import SuffixIndex

SCOPES = ("group", "group+global")
MAX_MATCH = SuffixIndex().max_match  # the context a draft is matched on, as the replica's


def _prob(top: list[tuple[int, float]], tok: int) -> float:
    return next((p for t, p in top if t == tok), 0.0)


def replay(batches: list[list[tuple[int, list[int], list[list[tuple[int, float]]]]]],
           gamma_max: int = 8, seeds: dict | None = None) -> dict[str, dict]:
    """Per drafter (``group``, ``group+global``): ``positions``, ``drafted`` (share of positions
    with a draft), ``argmax`` (share of drafted positions whose first draft token is the most
    likely), ``p_ratio`` (mean ``p(d) / p_max`` of the first draft token where drafted), the
    same three at positions with ``p_max >= 0.9`` (``*_sure``), and ``expected_tokens``
    ``[E(0..gamma_max)]``: tokens a step moves with up to ``g`` draft tokens (every token the
    drafter has, up to ``g``). ``copy``: its ``expected_tokens`` only.

    ``batches``: each a list of rows ``(group, tokens, top)``, ``top[t]`` the sampling
    distribution's most likely ``(token, p)`` at position ``t``, most likely first. A group may
    span batches (its index is kept). ``seeds``: group -> earlier responses its index (and the
    global one) starts with, as the draft server seeds a group from the prompt's history."""
    tally = {scope: _Tally(gamma_max) for scope in SCOPES}
    groups: dict = {}
    global_index = SuffixIndex()  # every row so far, earlier batches' and this one's
    for g, responses in (seeds or {}).items():
        groups[g] = SuffixIndex()
        for i, toks in enumerate(responses):
            groups[g].extend(f"h{i}", toks)
            global_index.extend(f"h{g}-{i}", toks)
    for b, batch in enumerate(batches):
        for g, _, _ in batch:
            groups.setdefault(g, SuffixIndex())
        for t in range(max((len(toks) for _, toks, _ in batch), default=0)):
            for g, toks, top in batch:
                if t >= len(toks):
                    continue
                ctx = toks[max(0, t - MAX_MATCH):t]
                draft = groups[g].propose(ctx, gamma_max, MIN_MATCH)
                tally["group"].add(draft, toks, top, t)
                tally["group+global"].add(draft or global_index.propose(ctx, gamma_max, MIN_MATCH), toks, top, t)
            for i, (g, toks, _) in enumerate(batch):  # lockstep: every row's token t joins
                if t < len(toks):
                    groups[g].extend(f"{b}-{i}", [toks[t]])
                    global_index.extend(f"{b}-{i}", [toks[t]])
    out = {scope: tally[scope].result() for scope in SCOPES}
    # sum p^2 per position, chained as the ceiling chains p_max (same positions, same alignment)
    out["copy"] = {"expected_tokens": expected_tokens(
        [[sum(p * p for _, p in dist) for dist in top] for batch in batches for _, _, top in batch], gamma_max)}
    return out


def replay_rounds(rounds: list[list[list[tuple]]], gamma_max: int = 8, keep: int | None = None) -> list[dict]:
    """History drafts (ours): ``replay`` of each round in turn, a round being the same prompts'
    groups sampled again (an epoch, the policy held fixed), each group's index starting with
    the ``keep`` most recent responses its prompt got in earlier rounds (None: all), as
    :class:`~umbra.speculative.history.ResponseHistory` keeps ``PER_PROMPT`` of them. Per round,
    ``replay``'s result plus ``history`` (the earlier responses a group starts with, on average)."""
    earlier: dict = {}
    out = []
    for batches in rounds:
        seeds = {g: (v if keep is None else v[-keep:]) for g, v in earlier.items()}
        res = replay(batches, gamma_max, seeds)
        groups = {g for batch in batches for g, _, _ in batch}
        res["history"] = sum(len(seeds.get(g, ())) for g in groups) / len(groups) if groups else 0.0
        out.append(res)
        for batch in batches:
            for g, toks, _ in batch:
                earlier.setdefault(g, []).append(toks)
    return out


class _Tally:
    """One drafter's counts over the replayed positions."""

    def __init__(self, gamma_max: int):
        self.gamma_max = gamma_max
        self.positions = self.sure = 0
        self.drafted = [0, 0]  # all positions, those with p_max >= 0.9
        self.argmax = [0, 0]
        self.p_ratio = [0.0, 0.0]
        self.e = [0.0] * (gamma_max + 1)

    def add(self, draft: list[int], toks: list[int], top: list, t: int) -> None:
        """Position ``t`` of a row, drafted ``draft``: the first token's quality, and E(g)."""
        pmax = top[t][0][1]
        sure = pmax >= 0.9
        self.positions += 1
        self.sure += sure
        # draft token k lands on position t + k - 1; none past the response's end
        accepted = chain([_prob(top[t + k], d) for k, d in enumerate(draft[:len(toks) - t])])
        run = 1.0
        for g in range(self.gamma_max + 1):
            run += accepted[g - 1] if 0 < g <= len(accepted) else 0.0
            self.e[g] += run
        if not draft:
            return
        is_max, ratio = draft[0] == top[t][0][0], _prob(top[t], draft[0]) / pmax
        for j in ((0, 1) if sure else (0,)):
            self.drafted[j] += 1
            self.argmax[j] += is_max
            self.p_ratio[j] += ratio

    def result(self) -> dict:
        n, (nd, nds) = self.positions, self.drafted
        return {"positions": n, "drafted": nd / n if n else 0.0,
                "argmax": self.argmax[0] / nd if nd else 0.0, "p_ratio": self.p_ratio[0] / nd if nd else 0.0,
                "drafted_sure": nds / self.sure if self.sure else 0.0,
                "argmax_sure": self.argmax[1] / nds if nds else 0.0,
                "p_ratio_sure": self.p_ratio[1] / nds if nds else 0.0,
                "expected_tokens": [x / n if n else 1.0 for x in self.e]}


def _columns(ceiling: list[float]) -> tuple[int, list[int], str]:
    """The longest draft length, the draft lengths shown and their header."""
    last = len(ceiling) - 1
    shown = sorted({1, min(4, last), last})
    return last, shown, " ".join(f"E({g})" for g in shown)


def print_table(drafts: dict, ceiling: list[float]) -> None:
    """The drafters beside the best token drafter (``ceiling``: its ``E(0..gamma_max)``)."""
    last, shown, es = _columns(ceiling)
    print(f"{'drafter':>14} | drafts at | first token = argmax | p(d)/p_max | at p_max>=0.9: drafts, argmax | "
          f"{es} | per-position rate (g={last}; spec-bound --accept-rate)")
    rows = [("best token", {"expected_tokens": ceiling})] + [(s, drafts[s]) for s in (*SCOPES, "copy")]
    for name, d in rows:
        e = d["expected_tokens"]
        if "drafted" in d:
            mid = (f"{100 * d['drafted']:8.0f}% | {100 * d['argmax']:19.0f}% | {d['p_ratio']:10.2f} | "
                   f"{100 * d['drafted_sure']:21.0f}%, {100 * d['argmax_sure']:3.0f}%")
        else:
            mid = f"{'-':>9} | {'-':>20} | {'-':>10} | {'-':>27}"
        print(f"{name:>14} | {mid} | " + " ".join(f"{e[g]:.2f}" for g in shown)
              + f" | {equivalent_rate(e[last], last):.3f}")


def print_rounds(rounds: list[dict], ceiling: list[float]) -> None:
    """The group drafter round by round, as history accumulates, beside the best token drafter."""
    last, shown, es = _columns(ceiling)
    print(f"{'round':>5} | history a group starts with | drafts at | first token = argmax | {es} | "
          f"per-position rate (g={last})")
    for r, res in enumerate(rounds, 1):
        d, e = res["group"], res["group"]["expected_tokens"]
        print(f"{r:>5} | {res['history']:>26.1f} | {100 * d['drafted']:8.0f}% | {100 * d['argmax']:19.0f}% | "
              + " ".join(f"{e[g]:.2f}" for g in shown) + f" | {equivalent_rate(e[last], last):.3f}")
    print(f"{'best':>5} | {'-':>26} | {'100':>8}% | {'100':>19}% | "
          + " ".join(f"{ceiling[g]:.2f}" for g in shown) + f" | {equivalent_rate(ceiling[last], last):.3f}")
