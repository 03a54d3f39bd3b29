"""``umbra cancel RUN``: ask the platform to cancel a run."""
from __future__ import annotations

import argparse

from umbra.client.api import ApiError, about_run
from umbra.client.commands.args import run_id
from umbra.client.output import add_json_flag, print_json
from umbra.client.render import make_console
from umbra.client.session import connect


def add_parser(sub) -> None:
    """Add ``cancel RUN [--json]``."""

    p = sub.add_parser("cancel", help="cancel a run")
    p.add_argument("run", type=run_id, help="run id")
    add_json_flag(p)


def run(args: argparse.Namespace) -> int:
    """Request the cancel; prints the run's state (``--json``: the run object) and returns 0.

    Raises:
        ApiError: ``no run N (or not visible to you)`` for a 404; the server's message
            prefixed ``run N`` otherwise (403 not allowed, 409 already ended); or a
            connection failure.
    """
    client = connect()
    try:
        answer = client.post(f"/api/runs/{args.run}/cancel/") or {}
    except ApiError as err:
        raise about_run(err, args.run) from None
    if args.json:
        print_json(answer)
        return 0
    state = answer.get("state", "?")
    console = make_console()
    if state == "cancelled":
        console.print(f"Run {args.run} cancelled.")
    else:
        console.print(f"Cancel requested for run {args.run} (state: {state}); it stops once its Ray job does.",
                      markup=False)
    return 0
