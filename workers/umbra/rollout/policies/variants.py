"""Named policy set-ups: the policies plus one-flag Seer ablations. The one list of
policy names that the benchmark, the simulator, the what-if page and their defaults read."""
from __future__ import annotations

from dataclasses import dataclass

from umbra.rollout.instance import GROUPED
from umbra.rollout.policies import make_policy

# Seer ablations: which switch each name turns off (divided alone = FIFO chunks, no speculation).
# "speculation": the engines' method (``umbra.rollout.instance.SPECULATION``; grouped by default);
# "history": grouped drafts also from earlier rollouts' responses to the same prompt (ours).
SEER_VARIANTS = {"seer": {}, "seer-no-spec": {"speculation": None}, "seer-no-context": {"context_aware": False},
                 "seer-no-divided": {"divided": False},
                 "seer-divided": {"context_aware": False, "speculation": None},
                 # grouped speculation from the current rollout's responses only (Seer as published)
                 "seer-no-history": {"history": False},
                 # grouped speculation under the per-token draft budget (ours) instead of Alg. 1's
                 # one draft length per batch
                 "seer-budget": {"speculation": "grouped-budget"},
                 # seer-no-spec's scheduling on engines running vLLM's n-gram prompt lookup (vanilla SD)
                 "spec-ngram": {"speculation": "ngram"},
                 # seer-no-spec's scheduling on engines running vLLM's speculative path with a
                 # proposer that never drafts: what the path itself costs in a rollout
                 "spec-null": {"speculation": "null"},
                 # beyond the paper: seer without speculation, group estimates primed by earlier rollouts
                 "seer-history": {"speculation": None, "length_history": True},
                 # beyond the paper: seer without speculation, instance loads kept within 4 requests
                 "seer-balanced": {"speculation": None, "balance_spread": 4},
                 # beyond the paper: seer without speculation, a new request placed where the least
                 # expected decode work is resident (SeerPolicy.work_placement)
                 "seer-work": {"speculation": None, "work_placement": True}}
BASELINES = ("verl", "static-group", "request-lb", "oracle-lfs")
# The paper's oracle on Seer's own machinery (divided rollout, KV ledger, reserve): ranked by
# true lengths instead of group estimates (``SeerOraclePolicy``).
# oracle-divided-evict: a new request may give up lower-ranked parked KV (SeerPolicy.fresh_evicts);
# oracle-group / oracle-group-mean: ranked by the group's true longest / mean length instead of
# the request's own (Alg. 2's predictor made perfect: what ranking by group can reach; ours)
ORACLE_VARIANTS = {"oracle-divided": {}, "oracle-divided-evict": {"fresh_evicts": True},
                   "oracle-group": {"group_rank": "max"}, "oracle-group-mean": {"group_rank": "mean"}}
VARIANT_NAMES = ("verl", "static-group", "request-lb", "seer-divided", "seer-no-spec", "seer", "seer-no-context",
                 "seer-no-divided", "seer-no-history", "seer-budget", "spec-ngram", "spec-null", "seer-history",
                 "seer-balanced", "seer-work", "oracle-lfs", "oracle-divided", "oracle-divided-evict", "oracle-group",
                 "oracle-group-mean")
# Variants only real engines can run: the simulator models grouped speculation by an acceptance
# length, with no notion of where drafts come from.
ENGINE_ONLY = ("seer-no-history", "seer-budget", "spec-ngram", "spec-null")
SIM_VARIANT_NAMES = tuple(n for n in VARIANT_NAMES if n not in ENGINE_ONLY)
# What bench, sim and the what-if page compare unless told otherwise.
DEFAULT_VARIANTS = ("verl", "static-group", "request-lb", "seer-no-spec", "seer", "oracle-lfs")
# Seer Table 4's rows: baseline (veRL), + divided rollout, + context-aware scheduling, + grouped SD.
ABLATION = (("verl", "baseline (verl)"), ("seer-divided", "+ divided rollout"),
            ("seer-no-spec", "+ context-aware scheduling"), ("seer", "+ grouped speculative decoding"))


@dataclass(frozen=True)
class Variant:
    """A named policy set-up: ``policy`` with ``options``, on engines running ``speculation``
    (None, "grouped" or "ngram"); ``history``: grouped drafts also from earlier rollouts."""

    name: str
    policy: str
    options: dict
    speculation: str | None = None
    history: bool = False

    @property
    def spec(self) -> bool:
        """Whether the engines speculate at all."""
        return self.speculation is not None


KV_RESERVES = ("auto", "adaptive", "estimate", "chunk", "none")


def variant(name: str, chunk_tokens: int, kv_block_tokens: int = 1, kv_reserve: str = "auto",
            balance_spread: int | None = None) -> Variant:
    """Resolve one of :data:`VARIANT_NAMES`, a seer variant optionally suffixed ``@reserve``
    (one of :data:`KV_RESERVES`, overriding ``kv_reserve``); seer variants align chunk ends to
    ``kv_block_tokens`` and keep ``kv_reserve`` KV free for parked requests when admitting
    a new one (``SeerPolicy.growth_reserve``) and move a parked request to an instance holding
    ``balance_spread`` fewer requests (``SeerPolicy.balance_spread``; None = off). Raises
    ValueError for other names."""
    full_name, (name, at, suffix) = name, name.partition("@")
    if at:  # "seer-no-spec@estimate": this variant's own reserve, beside others in one run
        if name not in SEER_VARIANTS and name not in ORACLE_VARIANTS:
            raise ValueError(f"'{full_name}': only seer and chunked oracle variants take a KV reserve (@reserve)")
        kv_reserve = suffix
    if kv_reserve not in KV_RESERVES:
        raise ValueError(f"unknown KV reserve '{kv_reserve[:40]}': use {', '.join(KV_RESERVES)}")
    if balance_spread is not None and balance_spread < 0:
        raise ValueError("balance spread must be >= 0 (0: off)")
    if name in BASELINES:
        return Variant(name, name, {})
    if name not in SEER_VARIANTS and name not in ORACLE_VARIANTS:
        raise ValueError(f"unknown policy '{name}': use {', '.join(VARIANT_NAMES)}")
    reserve = {"chunk": True, "estimate": "estimate", "none": False, "adaptive": "adaptive", "auto": "auto"}[kv_reserve]
    opts = {"chunk_tokens": chunk_tokens, "divided": True, "context_aware": True,
            "kv_block_tokens": kv_block_tokens, "growth_reserve": reserve, "balance_spread": balance_spread}
    if name in ORACLE_VARIANTS:
        return Variant(full_name, "seer-oracle", {**opts, **ORACLE_VARIANTS[name]})
    opts.update(SEER_VARIANTS[name])
    speculation, history = opts.pop("speculation", "grouped"), opts.pop("history", True)
    return Variant(full_name, "seer", opts, speculation, history and speculation in GROUPED)


def oracle_length_source(v: Variant, chunked: bool) -> bool:
    """Whether ``v``'s rollout samples the tokens an oracle of the same epoch will, so its lengths
    can rank it on real engines: without speculation (it draws other random numbers) and, for
    the chunked oracles (:data:`ORACLE_VARIANTS`, ``chunked``), in chunks (a chunk's seed follows
    from its request and position, so every chunked rollout of the same seeds samples the same
    tokens), for ``oracle-lfs`` whole."""
    return v.speculation is None and bool(v.options.get("divided", False)) == chunked


def policy_names(text: str) -> list[str]:
    """The names of a comma-separated ``--policies`` list, stripped; raises ValueError for an
    empty list or a name given twice (its rows and trace records would collide)."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise ValueError("--policies names no policy")
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"--policies names {', '.join(twice)} more than once")
    return names


def base_name(name: str) -> str:
    """The variant name without its ``@reserve`` suffix."""
    return name.split("@", 1)[0]


def build(v: Variant, lengths: dict[str, int] | None):
    """The policy object of variant ``v`` (the oracles get the true ``lengths``)."""
    if v.policy in ("oracle-lfs", "seer-oracle"):
        return make_policy(v.policy, lengths=lengths or {}, **v.options)
    return make_policy(v.policy, **v.options)


# Baselines every row is compared with: policy name -> the suffix of its ratio columns.
RATIO_BASES = (("verl", "verl"), ("static-group", "static"))


def add_ratios(results: dict) -> None:
    """Add ``throughput_vs_verl``/``tail_vs_verl`` and ``throughput_vs_static``/``tail_vs_static``
    (ratios to ``verl`` and ``static-group``, where they ran) to every row of ``results``
    (policy name -> row) in place."""
    for base_name, suffix in RATIO_BASES:
        base = results.get(base_name)
        if not base:
            continue
        for r in results.values():
            r[f"throughput_vs_{suffix}"] = r["throughput_tok_s"] / base["throughput_tok_s"]
            # a baseline without a tail (all requests end together) gives no meaningful ratio
            r[f"tail_vs_{suffix}"] = r["tail_time_s"] / base["tail_time_s"] if base["tail_time_s"] > 1e-3 else None
