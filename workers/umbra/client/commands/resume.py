"""``umbra resume RUN``: resume a failed or cancelled run from its latest checkpoint."""
from __future__ import annotations

import argparse

from umbra.client.api import ApiError, about_run
from umbra.client.commands.args import run_id
from umbra.client.output import add_json_flag, print_json
from umbra.client.render import make_console, printable, state_label
from umbra.client.session import connect


def add_parser(sub) -> None:
    """Add ``resume RUN [--json]``."""

    p = sub.add_parser("resume", help="resume a failed or cancelled run from its latest checkpoint",
                       description="The run is queued again as a new attempt and continues from its latest "
                                   "checkpoint (members and admins of its team). `umbra follow RUN` watches it.")
    p.add_argument("run", type=run_id, help="run id")
    add_json_flag(p)


def run(args: argparse.Namespace) -> int:
    """Request the resume; prints the run's new state (``--json``: the run object); returns 0.

    Raises:
        ApiError: ``no run N (or not visible to you)`` for a 404; the server's message
            prefixed ``run N`` otherwise (403 not allowed, 409 not failed or cancelled,
            429 a limit); or a connection failure.
    """
    client = connect()
    try:
        answer = client.post(f"/api/runs/{args.run}/resume/") or {}
    except ApiError as err:
        raise about_run(err, args.run) from None
    if args.json:
        print_json(answer)
        return 0
    state = printable(state_label(answer.get("state"), answer.get("queue_position")))
    make_console().print(f"Run {args.run} resumed (state: {state}); `umbra follow {args.run}` shows its progress.",
                         markup=False)
    return 0
