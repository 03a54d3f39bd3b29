"""``umbra logs RUN``: the tail of a run's Ray job log."""
from __future__ import annotations

import argparse
import sys

from umbra.client.api import ApiError, about_run
from umbra.client.commands.args import run_id
from umbra.client.output import add_json_flag, print_json
from umbra.client.render import printable_log
from umbra.client.session import connect


def add_parser(sub) -> None:
    """Add ``logs RUN [--json]``."""
    p = sub.add_parser("logs", help="the tail of a run's job log",
                       description="Prints the last part of the run's Ray job log as the platform keeps it "
                                   "(GET /api/runs/ID/logs/). --json prints {\"run\": ID, \"log_tail\": \"...\"}.")
    p.add_argument("run", type=run_id, help="run id")
    add_json_flag(p)


def run(args: argparse.Namespace) -> int:
    """Print the log tail (control characters other than newlines and tabs as ``?``);
    says on stderr when there is none yet; returns 0. Raises ApiError."""
    try:
        answer = connect().get(f"/api/runs/{args.run}/logs/") or {}
    except ApiError as err:
        raise about_run(err, args.run) from None
    tail = str(answer.get("log_tail") or "")
    if args.json:
        print_json({"run": args.run, "log_tail": tail})
        return 0
    if not tail.strip():
        print(f"Run {args.run} has no job log yet.", file=sys.stderr)
        return 0
    sys.stdout.write(printable_log(tail).rstrip("\n") + "\n")
    sys.stdout.flush()
    return 0
