"""``umbra compare RUN RUN ...``: the summary table and config diff of several runs."""
from __future__ import annotations

import argparse
import re

from umbra.client.api import ApiError
from umbra.client.commands.args import run_id
from umbra.client.errors import UsageError
from umbra.client.output import add_json_flag, print_json
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
    add_json_flag(p)


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


def _missing_run(err: ApiError, runs: list[int]) -> str:
    """The run a 404 of ``/api/compare/`` is about: the id its message names (``no such
    run: 5``) when it is one of ``runs``, else ``one of runs 1, 2``."""
    named = [int(n) for n in re.findall(r"\d+", re.sub(r"HTTP \d+", "", err.message))]
    hit = next((n for n in named if n in runs), None)
    if hit is not None:
        return f"run {hit}"
    return f"run {runs[0]}" if len(runs) == 1 else f"one of runs {', '.join(map(str, runs))}"


def run(args: argparse.Namespace) -> int:
    """Print the comparison (``--json``: the ``/api/compare/`` answer); returns 0.

    Raises:
        UsageError: see :func:`query`.
        ApiError: ``no run N (or not visible to you)`` for a run not found; the server's
            message prefixed ``compare`` otherwise.
    """
    q = query(args)
    try:
        data = connect().get("/api/compare/", q) or {}
    except ApiError as err:
        if err.status == 404:
            raise err.naming(_missing_run(err, [int(r) for r in q["runs"].split(",")])) from None
        raise err.with_prefix("compare") from None
    if args.json:
        print_json(data)
        return 0
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
