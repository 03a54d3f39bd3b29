"""The comparison summary table (pure logic): per-run statistics, the reference run,
ratios to it and the config diff."""
from __future__ import annotations

from typing import Any

# Summary column -> (metric name, statistic). Medians damp the first iteration's warm-up.
COLUMNS: dict[str, tuple[str, str]] = {
    "throughput_tok_s": ("rollout/throughput_tok_s", "median"),
    "tail_time_s": ("rollout/tail_time_s", "median"),
    "accept_len": ("rollout/spec/accept_len", "median"),
    "reward": ("reward/mean", "last"),
    "accuracy": ("reward/accuracy", "last"),
    "iterations": ("iteration/time_s", "count"),
}
# Config keys that choose the rollout policy: runs differing only in these share a config.
POLICY_KEYS = frozenset({"rollout_policy", "chunk_tokens", "seer_divided", "seer_context_aware", "spec_decoding"})
BASELINE_POLICY = "static-group"


def summary_row(stats: dict[str, dict[str, float]]) -> dict[str, float | None]:
    """``stats`` is ``{metric: {"median", "last", "count"}}`` of one run; returns one
    value per summary column (None when the run logged no such metric)."""
    row: dict[str, float | None] = {}
    for column, (metric, stat) in COLUMNS.items():
        s = stats.get(metric)
        row[column] = None if s is None else s[stat]
    return row


def ratios(row: dict[str, float | None], reference: dict[str, float | None]) -> dict[str, float | None]:
    """``row / reference`` per column, None where either is missing or the reference is 0."""
    out: dict[str, float | None] = {}
    for column in COLUMNS:
        a, b = row.get(column), reference.get(column)
        out[column] = None if a is None or b in (None, 0) else a / b
    return out


def _without_policy(config: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in config.items() if k not in POLICY_KEYS}


def default_reference(configs: dict[int, dict[str, Any]]) -> int:
    """The reference run among ``configs`` (``{run_id: config}``, in the user's order):
    the ``static-group`` run sharing its non-policy config with the most other runs
    (first on ties), else the first run. Raises ValueError on an empty mapping."""
    if not configs:
        raise ValueError("no runs to compare")
    baselines = [r for r, c in configs.items() if c.get("rollout_policy") == BASELINE_POLICY]
    if not baselines:
        return next(iter(configs))

    def same_config_count(run_id: int) -> int:
        mine = _without_policy(configs[run_id])
        return sum(1 for r, c in configs.items() if r != run_id and _without_policy(c) == mine)

    return max(baselines, key=lambda r: (same_config_count(r), -baselines.index(r)))


def config_diff(configs: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """Only the config keys whose values differ between runs:
    ``{"keys": [...], "values": {run_id: {key: value or None}}}``."""
    keys = sorted({k for c in configs.values() for k in c})
    differing = [k for k in keys if len({repr(c.get(k)) for c in configs.values()}) > 1]
    return {"keys": differing, "values": {r: {k: c.get(k) for k in differing} for r, c in configs.items()}}
