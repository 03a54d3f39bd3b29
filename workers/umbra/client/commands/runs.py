"""``umbra runs``: a table of the runs the user can see, newest first."""
from __future__ import annotations

import argparse

from umbra.client.api import ApiClient
from umbra.client.output import add_json_flag, print_json
from umbra.client.render import make_console
from umbra.client.session import connect
from umbra.client.tables import runs_table

STATES = ("queued", "dispatching", "running", "succeeded", "failed", "cancelled")
MAX_PAGES = 1000  # a bound on the paging loop whatever the server says


def _positive(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {value!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return n


def add_parser(sub) -> None:
    """Add ``runs [--team] [--experiment] [--policy] [--state] [--tag] [--limit] [--json]``."""
    p = sub.add_parser("runs", help="list runs (newest first)",
                       description="A queued run's state shows its place in the queue: `queued (#2)`. "
                                   "--json prints {\"count\": N, \"runs\": [run objects of GET /api/runs/]}.")
    p.add_argument("--team", help="team slug")
    p.add_argument("--experiment", help="experiment name or id")
    p.add_argument("--policy", help="rollout policy, e.g. seer")
    p.add_argument("--state", choices=STATES)
    p.add_argument("--tag")
    p.add_argument("--limit", type=_positive, default=20, help="at most this many runs (default 20)")
    add_json_flag(p)


def filters(args: argparse.Namespace) -> dict:
    """The ``GET /api/runs/`` query of the flags (unset ones left out)."""
    return {k: getattr(args, k) for k in ("team", "experiment", "policy", "state", "tag")
            if getattr(args, k) is not None}


def fetch_runs(client: ApiClient, query: dict, limit: int) -> tuple[list[dict], int]:
    """Up to ``limit`` runs matching ``query``, following pages; returns them and the
    server's total count.

    Raises:
        ApiError: as :meth:`ApiClient.get`.
    """
    runs: list[dict] = []
    count = 0
    for page in range(1, MAX_PAGES + 1):
        answer = client.get("/api/runs/", {**query, "page": page}) or {}
        count = int(answer.get("count") or 0)
        runs.extend(answer.get("results") or [])
        if len(runs) >= limit or not answer.get("next") or not answer.get("results"):
            break
    return runs[:limit], max(count, len(runs))


def run(args: argparse.Namespace) -> int:
    """Print the table (``--json``: ``{"count", "runs"}``); returns 0. Raises ApiError /
    CliError (not logged in)."""
    runs, count = fetch_runs(connect(), filters(args), args.limit)
    if args.json:
        print_json({"count": count, "runs": runs})
        return 0
    console = make_console()
    if not runs:
        console.print("No runs.")
        return 0
    console.print(runs_table(runs))
    if count > len(runs):
        console.print(f"{len(runs)} of {count} runs shown (--limit N for more)", style="dim")
    return 0
