"""The comparison summary table (pure logic): per-run statistics, the reference run,
ratios to it and the config diff."""
from __future__ import annotations

from typing import Any

from umbra.telemetry.summary_columns import SUMMARY_COLUMNS

# Summary column -> (metric name, statistic), as defined once in umbra.telemetry.summary_columns.
COLUMNS: dict[str, tuple[str, str]] = {c.key: (c.metric, c.stat) for c in SUMMARY_COLUMNS}
# Every metric a summary column reads (its own and its fallback): the statistics to compute.
STAT_METRICS: list[str] = sorted({m for c in SUMMARY_COLUMNS for m in c.metrics})
# Columns that read one of two metrics (accuracy: validation, else training).
_TWO_SOURCES = [c for c in SUMMARY_COLUMNS if c.fallback]
# Config keys that choose the rollout policy: runs differing only in these share a config.
POLICY_KEYS = frozenset({"rollout_policy", "chunk_tokens", "seer_divided", "seer_context_aware", "seer_length_history",
                         "spec_decoding", "spec_history"})
# Reference policies, preferred in this order: the peer as it runs, then its capped variant.
BASELINE_POLICIES = ("verl", "static-group")


def summary_row(stats: dict[str, dict[str, float]]) -> dict[str, float | None]:
    """``stats`` is ``{metric: {"median", "last", "count"}}`` of one run; returns one
    value per summary column (None when the run logged no such metric)."""
    row: dict[str, float | None] = {}
    for column in SUMMARY_COLUMNS:
        metric = column.source(stats)
        row[column.key] = None if metric is None else stats[metric][column.stat]
    return row


def summary_sources(stats: dict[str, dict[str, float]]) -> dict[str, str]:
    """``{column: metric}`` for the columns that read one of two metrics and found one in
    ``stats`` (``{"accuracy": "val/accuracy"}`` or ``"reward/accuracy"``), so a reader can
    tell validation accuracy from training accuracy."""
    return {c.key: m for c in _TWO_SOURCES if (m := c.source(stats)) is not None}


# A reference value this close to 0 gives no meaningful ratio (1e-3 tok/s, 0.0001 reward...).
NEAR_ZERO = 1e-6
# Columns a run has only when its config enables them: accept length needs speculation.
NEEDS_CONFIG = {"accept_len": "spec_decoding"}


def applicable(row: dict[str, float | None], config: dict[str, Any]) -> dict[str, float | None]:
    """``row`` with the columns the run's config does not have set to None (accept length
    of a run without speculative decoding is no accept length)."""
    return {k: (None if k in NEEDS_CONFIG and not config.get(NEEDS_CONFIG[k]) else v) for k, v in row.items()}


def ratios(row: dict[str, float | None], reference: dict[str, float | None],
           sources: dict[str, str] | None = None, reference_sources: dict[str, str] | None = None
           ) -> dict[str, float | None]:
    """``row / reference`` per column, None where either is missing or the reference is near 0,
    and where the two read different metrics (``sources``: validation vs training accuracy)."""
    sources, reference_sources = sources or {}, reference_sources or {}
    out: dict[str, float | None] = {}
    for column in COLUMNS:
        a, b = row.get(column), reference.get(column)
        apart = sources.get(column) != reference_sources.get(column)
        out[column] = None if a is None or b is None or abs(b) < NEAR_ZERO or apart else a / b
    return out


def _without_policy(config: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in config.items() if k not in POLICY_KEYS}


def default_reference(configs: dict[int, dict[str, Any]], with_data: set[int] | None = None) -> int:
    """The reference run among ``configs`` (``{run_id: config}``, in the user's order):
    the ``verl`` run (else the ``static-group`` run) sharing its non-policy config with the
    most other runs (first on ties), else the first run. Runs in ``with_data`` (those with metrics; all
    when None) are preferred, so a run cancelled before its first point is no reference.
    Raises ValueError on an empty mapping."""
    if not configs:
        raise ValueError("no runs to compare")
    candidates = [r for r in configs if with_data is None or r in with_data] or list(configs)
    baselines = next(([r for r in candidates if configs[r].get("rollout_policy") == name]
                      for name in BASELINE_POLICIES
                      if any(configs[r].get("rollout_policy") == name for r in candidates)), [])
    if not baselines:
        return candidates[0]

    def same_config_count(run_id: int) -> int:
        mine = _without_policy(configs[run_id])
        return sum(1 for r, c in configs.items() if r != run_id and _without_policy(c) == mine)

    return max(baselines, key=lambda r: (same_config_count(r), -baselines.index(r)))


def reference_mismatch(configs: dict[int, dict[str, Any]], reference: int) -> dict[int, list[str]]:
    """``{run_id: [keys]}``: for each other run, the non-policy config keys in which it
    differs from the reference (runs of the same config are left out). Ratios between
    such runs compare more than the rollout policy."""
    ref = _without_policy(configs[reference])
    out: dict[int, list[str]] = {}
    for run_id, config in configs.items():
        mine = _without_policy(config)
        keys = sorted(k for k in set(ref) | set(mine) if ref.get(k) != mine.get(k))
        if run_id != reference and keys:
            out[run_id] = keys
    return out


def config_diff(configs: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """Only the config keys whose values differ between runs:
    ``{"keys": [...], "values": {run_id: {key: value or None}}}``."""
    keys = sorted({k for c in configs.values() for k in c})
    differing = [k for k in keys if len({repr(c.get(k)) for c in configs.values()}) > 1]
    return {"keys": differing, "values": {r: {k: c.get(k) for k in differing} for r, c in configs.items()}}
