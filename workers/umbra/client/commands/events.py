"""``umbra events RUN``: a run's event log (state changes and the job's notes), oldest first."""
from __future__ import annotations

import argparse

from rich.table import Table
from rich.text import Text

from umbra.client.api import ApiError, about_run
from umbra.client.commands.args import run_id
from umbra.client.output import add_json_flag, print_json
from umbra.client.render import fmt_time, make_console, printable_log, state_text, text
from umbra.client.session import connect


def add_parser(sub) -> None:
    """Add ``events RUN [--json]``."""
    p = sub.add_parser("events", help="a run's event log: state changes and the job's notes",
                       description="--json prints the list of GET /api/runs/ID/events/ "
                                   "([{\"kind\", \"from_state\", \"to_state\", \"reason\", \"at\"}]).")
    p.add_argument("run", type=run_id, help="run id")
    add_json_flag(p)


def _lines(reason: str) -> Text:
    """A multi-line reason (a failure's last log lines) as lines in its cell, not ``?`` marks;
    terminal escapes dropped as in ``umbra logs``."""
    return Text(printable_log(str(reason)).rstrip("\n"))


def events_table(events: list[dict]) -> Table:
    """at (local time), kind, from → to, reason."""
    table = Table(show_edge=False, pad_edge=False)
    for header in ("at", "kind", "from", "to", "reason"):
        table.add_column(header)
    for e in events:
        table.add_row(text(fmt_time(e.get("at"), seconds=True)), text(e.get("kind")), text(e.get("from_state") or None),
                      state_text(e.get("to_state") or None), _lines(e.get("reason") or ""))
    return table


def run(args: argparse.Namespace) -> int:
    """Print the events (``--json``: the list); returns 0. Raises ApiError."""
    try:
        events = connect().get(f"/api/runs/{args.run}/events/") or []
    except ApiError as err:
        raise about_run(err, args.run) from None
    if isinstance(events, dict):  # tolerate a paginated answer
        events = events.get("results") or []
    if args.json:
        print_json(events)
        return 0
    console = make_console()
    console.print(events_table(events) if events else f"Run {args.run} has no events.")
    return 0
