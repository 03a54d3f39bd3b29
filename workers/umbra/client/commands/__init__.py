"""The API subcommands of ``umbra``; each module has ``add_parser(sub)`` and ``run(args) -> int``."""
from __future__ import annotations

import argparse
import os
import sys

from umbra.client.commands import (cancel, compare, events, export, follow, label, login, logout, logs, resume, runs,
                                   show, submit, whoami)
from umbra.client.errors import EXIT_SERVER, CliError

# In the order `umbra --help` lists them.
MODULES = {"login": login, "whoami": whoami, "logout": logout, "submit": submit, "runs": runs, "show": show,
           "follow": follow, "logs": logs, "events": events, "cancel": cancel, "resume": resume,
           "label": label, "compare": compare, "export": export}
EXIT_INTERRUPTED = 130


def register(sub) -> None:
    """Add every API subcommand to the ``add_subparsers()`` object ``sub``."""
    for module in MODULES.values():
        module.add_parser(sub)


def run(args: argparse.Namespace) -> int:
    """Run the subcommand named by ``args.command``; returns the exit code.

    A :class:`CliError` is printed as ``umbra: message`` line(s) on stderr with its exit
    code; Ctrl-C exits 130 without output; any other exception is reported in one line
    with code 1 (``UMBRA_DEBUG=1`` shows the traceback instead).
    """
    try:
        return MODULES[args.command].run(args)
    except CliError as err:
        sys.stdout.flush()
        for line in err.lines():
            print(line, file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except Exception as exc:  # a bug or an unforeseen failure: still one line, no traceback
        if os.environ.get("UMBRA_DEBUG"):
            raise
        print(f"umbra: unexpected error: {type(exc).__name__}: {exc} (UMBRA_DEBUG=1 shows details)",
              file=sys.stderr)
        return EXIT_SERVER
