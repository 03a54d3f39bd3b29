"""``umbra label RUN [--name N] [--tag T ...] [--note TEXT]``: name, tag or annotate a run
(``PATCH /api/runs/ID/``; ours)."""
from __future__ import annotations

import argparse

from umbra.client.api import ApiError, about_run
from umbra.client.commands.args import run_id
from umbra.client.errors import EXIT_USAGE, CliError
from umbra.client.output import add_json_flag, print_json
from umbra.client.render import make_console, printable
from umbra.client.session import connect


def add_parser(sub) -> None:
    """Add ``label RUN [--name N] [--tag T ...] [--clear-tags] [--note TEXT] [--json]``."""
    p = sub.add_parser("label", help="name, tag or annotate a run",
                       description="Sets what is given and keeps the rest; --tag replaces the run's own tags "
                                   "(its experiment's stay), --clear-tags removes them. --json prints the run object.")
    p.add_argument("run", type=run_id, help="run id")
    p.add_argument("--name", help="the run's name ('' clears it)")
    p.add_argument("--tag", action="append", dest="tags", metavar="TAG", help="a tag (repeat for more)")
    p.add_argument("--clear-tags", action="store_true", help="remove the run's own tags")
    p.add_argument("--note", help="a free note ('' clears it)")
    add_json_flag(p)


def body(args: argparse.Namespace) -> dict:
    """The PATCH body of ``args``. Raises CliError when nothing would change."""
    out: dict = {}
    if args.name is not None:
        out["name"] = args.name
    if args.clear_tags or args.tags:
        out["tags"] = [] if args.clear_tags else args.tags
    if args.note is not None:
        out["note"] = args.note
    if not out:
        raise CliError("nothing to change: give --name, --tag, --clear-tags or --note", EXIT_USAGE)
    return out


def run(args: argparse.Namespace) -> int:
    """Send the labels; prints them (``--json``: the run object) and returns 0. Raises ApiError."""
    changes = body(args)
    client = connect()
    try:
        answer = client.request("PATCH", f"/api/runs/{args.run}/", json=changes) or {}
    except ApiError as err:
        raise about_run(err, args.run) from None
    if args.json:
        print_json(answer)
        return 0
    tags = ", ".join(answer.get("tags") or []) or "none"
    make_console().print(printable(f"Run {args.run}: name {answer.get('name') or '-'}; tags {tags}; "
                                   f"note {answer.get('note') or '-'}"), markup=False, highlight=False)
    return 0
