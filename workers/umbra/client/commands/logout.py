"""``umbra logout``: forget the stored API token of a server."""
from __future__ import annotations

import argparse
import os
import sys

from umbra.client import credentials
from umbra.client.api import ApiClient, ApiError
from umbra.client.render import make_console

REVOKE_TIMEOUT_S = (3.0, 10.0)


def add_parser(sub) -> None:
    """Add ``logout [--url URL]``."""
    p = sub.add_parser("logout", help="forget the stored API token",
                       description="Removes the token from $UMBRA_CONFIG_DIR/credentials.json (the URL stays as "
                                   "`umbra login`'s default) and asks the server to revoke it where it can "
                                   "(DELETE /api/auth/token/). UMBRA_TOKEN, if set, is not touched.")
    p.add_argument("--url", help="log out of this server only if it is the stored one (default: the stored one)")


def _revoke(url: str, token: str) -> str:
    """Ask ``url`` to revoke ``token``; returns what happened, as a sentence's end."""
    try:
        ApiClient(url, token, timeout=REVOKE_TIMEOUT_S).request("DELETE", "/api/auth/token/")
    except ApiError as err:
        if err.status in (404, 405):
            return "this server cannot revoke tokens, so it stays valid there until an admin deletes it"
        if err.status == 401:
            return "the server no longer accepted it"
        return f"revoking it on the server failed ({err.message})"
    return "the server revoked it"


def run(args: argparse.Namespace) -> int:
    """Forget the token; prints what was done and returns 0 (also when none was stored).

    Raises:
        CliError: the credentials file cannot be written.
    """
    console = make_console()
    forgotten = credentials.forget(args.url)
    if forgotten is None:
        where = credentials.normalize_url(args.url) if args.url else "any server"
        console.print(f"No token stored for {where}; nothing to forget.", markup=False, highlight=False,
                      soft_wrap=True)
    else:
        url, token = forgotten
        console.print(f"Logged out of {url}: token removed from {credentials.credentials_path()}; "
                      f"{_revoke(url, token)}.", markup=False, highlight=False, soft_wrap=True)
    if os.environ.get("UMBRA_TOKEN", "").strip():
        print("umbra: note: UMBRA_TOKEN is set and still logs commands in; unset it too.", file=sys.stderr)
    return 0
