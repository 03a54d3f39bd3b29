"""``umbra cancel RUN``: ask the platform to cancel a run."""
from __future__ import annotations

import argparse

from umbra.client.api import ApiError
from umbra.client.commands.args import run_id
from umbra.client.render import make_console
from umbra.client.session import connect


def add_parser(sub) -> None:
    """Add ``cancel RUN``."""

    p = sub.add_parser("cancel", help="cancel a run")
    p.add_argument("run", type=run_id, help="run id")


def run(args: argparse.Namespace) -> int:
    """Request the cancel; prints the run's state and returns 0.

    Raises:
        ApiError: with the server's message (403 not allowed, 404 not found, 409 already
            ended), prefixed ``run N``; or a connection failure.
    """
    client = connect()
    try:
        answer = client.post(f"/api/runs/{args.run}/cancel/") or {}
    except ApiError as err:
        raise err.with_prefix(f"run {args.run}") from None
    state = answer.get("state", "?")
    console = make_console()
    if state == "cancelled":
        console.print(f"Run {args.run} cancelled.")
    else:
        console.print(f"Cancel requested for run {args.run} (state: {state}); it stops once its Ray job does.",
                      markup=False)
    return 0
