"""``umbra whoami``: the logged-in user, the server, and their teams with roles."""
from __future__ import annotations

import argparse
import os

from umbra.client import credentials
from umbra.client.api import ApiError
from umbra.client.output import add_json_flag, print_json
from umbra.client.render import make_console, printable
from umbra.client.session import connect


def add_parser(sub) -> None:
    """Add ``whoami [--json]``."""
    p = sub.add_parser("whoami", help="who you are logged in as, where, and your teams and roles",
                       description="--json prints {\"username\", \"url\", \"token_from\", \"teams\": "
                                   "[{\"slug\", \"name\", \"role\"}]}.")
    add_json_flag(p)


def run(args: argparse.Namespace) -> int:
    """Ask the server (``GET /api/me/``); prints the answer and returns 0.

    Raises:
        CliError: not logged in. ApiError: the token was refused (401) or the server not reached.
    """
    client = connect()
    try:
        me = client.get("/api/me/") or {}
    except ApiError as err:
        raise err.with_prefix(client.url) from None
    token_from = "UMBRA_TOKEN" if os.environ.get("UMBRA_TOKEN", "").strip() else str(credentials.credentials_path())
    teams = [{"slug": t.get("slug"), "name": t.get("name"), "role": t.get("role")} for t in me.get("teams") or []]
    if args.json:
        print_json({"username": me.get("username"), "url": client.url, "token_from": token_from, "teams": teams})
        return 0
    console = make_console()
    console.print(f"{printable(str(me.get('username', '?')))} on {client.url}", markup=False, highlight=False)
    if teams:
        width = max(len(str(t["slug"])) for t in teams)
        for t in teams:
            console.print(f"  {printable(str(t['slug'])):<{width}}  {printable(str(t['role']))}"
                          f"  ({printable(str(t['name']))})", markup=False, highlight=False)
    else:
        console.print("  no teams (an admin adds you on Team → Members)", markup=False)
    console.print(f"token from {token_from}", markup=False, highlight=False, style="dim")
    return 0
