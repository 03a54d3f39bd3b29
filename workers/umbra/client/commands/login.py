"""``umbra login``: exchange a username and password for an API token and store it."""
from __future__ import annotations

import argparse
import getpass
import os
import sys

from umbra.client import credentials
from umbra.client.api import ApiClient, ApiError
from umbra.client.errors import CliError, UsageError
from umbra.client.render import make_console

DEFAULT_URL = "http://127.0.0.1:8000"


def add_parser(sub) -> None:
    """Add ``login [--url] [--username] [--password]``."""
    p = sub.add_parser("login", help="log in to an Umbra platform and store an API token",
                       description="Prompts for what is not given (the password without echo; from a pipe, its first "
                                   "line: `pass show umbra | umbra login --username me`). Stores the "
                                   "URL and token in $UMBRA_CONFIG_DIR/credentials.json (default ~/.config/umbra).")
    p.add_argument("--url", help=f"platform URL (default: UMBRA_URL, the stored one, or {DEFAULT_URL})")
    p.add_argument("--username")
    p.add_argument("--password", help="prefer the prompt: a flag is visible to other local users")


def _default_url() -> str:
    if os.environ.get("UMBRA_URL"):
        return os.environ["UMBRA_URL"]
    try:
        return str(credentials.read_file().get("url") or DEFAULT_URL)
    except CliError:  # a broken file is what login replaces
        return DEFAULT_URL


def _ask(prompt: str, flag: str, secret: bool = False) -> str:
    try:
        if secret and not sys.stdin.isatty():  # piped (`... | umbra login`): getpass would warn of echo
            value = sys.stdin.readline().rstrip("\r\n")
            if not value:
                raise EOFError
        else:
            value = getpass.getpass(f"{prompt}: ") if secret else input(f"{prompt}: ")
    except EOFError:
        raise UsageError(f"no {flag[2:]} given: pass {flag}") from None
    if not value.strip():
        raise UsageError(f"no {flag[2:]} given: pass {flag}")
    return value if secret else value.strip()


def run(args: argparse.Namespace) -> int:
    """Log in; prints who is logged in where and returns 0.

    Raises:
        UsageError: a missing value when there is nothing to prompt with, or bad credentials.
        ApiError: the server refused or could not be reached.
    """
    default = _default_url()
    url = args.url
    if not url:
        try:
            url = input(f"Platform URL [{default}]: ").strip() or default
        except EOFError:
            url = default
    url = credentials.normalize_url(url)
    if not url:
        raise UsageError("no URL given: pass --url")
    username = args.username or _ask("Username", "--username")
    password = args.password or _ask("Password", "--password", secret=True)

    try:
        answer = ApiClient(url).post("/api/auth/token/", {"username": username, "password": password})
    except ApiError as err:
        raise err.with_prefix("login failed") from None
    token = (answer or {}).get("token") if isinstance(answer, dict) else None
    if not token:
        raise ApiError(f"login failed: {url} answered without a token")
    me = ApiClient(url, token).get("/api/me/") or {}
    path = credentials.save(url, token)

    teams = ", ".join(f"{t.get('slug')} ({t.get('role')})" for t in me.get("teams", [])) or "none"
    console = make_console()
    console.print(f"Logged in to {url} as {me.get('username', username)}; teams: {teams}", markup=False)
    console.print(f"Token stored in {path}", markup=False, style="dim")
    if os.environ.get("UMBRA_TOKEN"):
        console.print("Note: UMBRA_TOKEN is set and overrides the stored token.", style="yellow")
    return 0
