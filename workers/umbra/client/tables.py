"""rich tables built from API answers shaped as in docs/api.md."""
from __future__ import annotations

from rich.table import Table

from umbra.client.render import fmt_iterations, fmt_time, fmt_value, fmt_with_ratio, state_text, text
from umbra.telemetry import summary_columns

# Summary columns of GET /api/compare/: (key, header), as the platform defines them.
SUMMARY_COLUMNS = tuple((c.key, c.title) for c in summary_columns.SUMMARY_COLUMNS)


def runs_table(runs: list[dict]) -> Table:
    """The ``umbra runs`` table of run objects: id, team, experiment, state (``queued (#2)``
    with the run's place in the queue), policy, model, iterations done/total, created (local time)."""
    table = Table(show_edge=False, pad_edge=False)
    for header in ("id", "team", "experiment", "state", "policy", "model", "iterations", "created"):
        table.add_column(header, justify="right" if header in ("id", "iterations") else "left")
    for run in runs:
        table.add_row(text(run.get("id")), text(run.get("team")), text(run.get("experiment")),
                      state_text(run.get("state"), run.get("queue_position")), text(run.get("policy")),
                      text(run.get("model")),
                      text(fmt_iterations(run.get("iterations_done"), run.get("iterations_total"))),
                      text(fmt_time(run.get("created_at"))))
    return table


def _is_reference(run: dict, data: dict) -> bool:
    return str(run.get("id")) == str(data.get("reference"))


def _run_label(run: dict, data: dict) -> str:
    label = run.get("label") or f"#{run.get('id')}"
    return f"{label} (ref)" if _is_reference(run, data) else label


def compare_table(data: dict) -> Table:
    """The summary table of ``GET /api/compare/``: one row per run, each summary value
    with its ratio to the reference run (``231.0 (1.02x)``); the reference is marked."""
    table = Table(title="summary (ratio to reference)", show_edge=False, pad_edge=False)
    table.add_column("run")
    table.add_column("state")
    for _, header in SUMMARY_COLUMNS:
        table.add_column(header, justify="right")
    for run in data.get("runs", []):
        summary, ratios = run.get("summary") or {}, run.get("ratios") or {}
        cells = [text(fmt_with_ratio(summary.get(k), ratios.get(k))) for k, _ in SUMMARY_COLUMNS]
        table.add_row(text(_run_label(run, data), "bold" if _is_reference(run, data) else ""),
                      state_text(run.get("state")), *cells)
    return table


def _final(series: dict, metric: str, run_id) -> float | None:
    points = (series.get(metric) or {}).get(str(run_id)) or {}
    ys = points.get("y") or []
    return ys[-1] if ys else None


def finals_table(data: dict) -> Table | None:
    """Final value of each compared metric per run, with its ratio to the reference's
    final value; None when the answer has no series."""
    series, metrics = data.get("series") or {}, data.get("metrics") or []
    if not series or not metrics:
        return None
    table = Table(title="final values (ratio to reference)", show_edge=False, pad_edge=False)
    table.add_column("run")
    for metric in metrics:
        table.add_column(metric, justify="right")
    ref = data.get("reference")
    for run in data.get("runs", []):
        cells = []
        for metric in metrics:
            value, base = _final(series, metric, run.get("id")), _final(series, metric, ref)
            ratio = value / base if value is not None and base not in (None, 0) else None
            cells.append(text(fmt_with_ratio(value, ratio)))
        table.add_row(text(_run_label(run, data)), *cells)
    return table


def config_diff_table(data: dict) -> Table | None:
    """The config keys that differ between the compared runs (rows) and each run's
    value (columns); None when every config is the same."""
    diff = data.get("config_diff") or {}
    keys, values = diff.get("keys") or [], diff.get("values") or {}
    if not keys:
        return None
    table = Table(title="config diff", show_edge=False, pad_edge=False)
    table.add_column("key")
    runs = data.get("runs") or [{"id": rid} for rid in values]
    for run in runs:
        table.add_column(f"#{run.get('id')}")
    for key in keys:
        row = []
        for run in runs:
            run_values = values.get(str(run.get("id"))) or {}
            row.append(text(fmt_value(run_values[key]) if key in run_values else None))
        table.add_row(text(key), *row)
    return table
