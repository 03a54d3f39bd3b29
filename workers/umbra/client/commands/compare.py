"""``umbra compare RUN RUN ...``: the summary table and config diff of several runs."""
from __future__ import annotations

import argparse

from umbra.client.api import ApiError
from umbra.client.commands.args import run_id
from umbra.client.errors import UsageError
from umbra.client.render import make_console
from umbra.client.session import connect
from umbra.client.tables import compare_table, config_diff_table, finals_table

MAX_RUNS = 50


def add_parser(sub) -> None:
    """Add ``compare RUN [RUN ...] [--reference RUN] [--metrics a,b]``."""

    p = sub.add_parser("compare", help="compare runs: summary with ratios to a reference, config diff")
    p.add_argument("runs", type=run_id, nargs="+", metavar="RUN", help="run ids (1 to 50)")
    p.add_argument("--reference", type=run_id, help="run the ratios are taken to (default: chosen by the server)")
    p.add_argument("--metrics", help="comma-separated metric names; adds a table of their final values")


def query(args: argparse.Namespace) -> dict:
    """The ``GET /api/compare/`` query of the arguments.

    Raises:
        UsageError: more than 50 runs, a reference not among them, or empty ``--metrics``.
    """
    runs = list(dict.fromkeys(args.runs))
    if len(runs) > MAX_RUNS:
        raise UsageError(f"at most {MAX_RUNS} runs can be compared ({len(runs)} given)")
    if args.reference is not None and args.reference not in runs:
        raise UsageError(f"--reference {args.reference} is not among the compared runs")
    q = {"runs": ",".join(map(str, runs)), "reference": args.reference}
    if args.metrics is not None:
        names = [m.strip() for m in args.metrics.split(",") if m.strip()]
        if not names:
            raise UsageError("--metrics names no metric")
        q["metrics"] = ",".join(names)
    return q


def run(args: argparse.Namespace) -> int:
    """Print the comparison; returns 0. Raises UsageError, ApiError (e.g. a run not found)."""
    q = query(args)
    try:
        data = connect().get("/api/compare/", q) or {}
    except ApiError as err:
        raise err.with_prefix("compare") from None
    console = make_console()
    console.print(compare_table(data))
    for run, keys in (data.get("reference_mismatch") or {}).items():
        console.print(f"note: run {run} differs from reference {data.get('reference')} in {', '.join(keys)} "
                      "(its ratios compare more than the rollout policy)")
    if args.metrics is not None:
        finals = finals_table(data)
        console.print(finals if finals is not None else "No points of the requested metrics.")
    console.print()
    diff = config_diff_table(data)
    console.print(diff if diff is not None else "Config diff: none (the configs are the same).")
    return 0
