"""``umbra submit config.yaml``: validate a run config locally, then submit it."""
from __future__ import annotations

import argparse

from umbra.client.api import ApiClient, ApiError
from umbra.client.errors import UsageError
from umbra.client.render import make_console
from umbra.client.session import connect
from umbra.client.submission import Submission, load_submission, local_errors


def add_parser(sub) -> None:
    """Add ``submit CONFIG [--team SLUG] [--experiment NAME]``."""
    p = sub.add_parser("submit", help="submit a run from a YAML file of RunConfig fields",
                       description="The YAML holds RunConfig fields at the top level, plus optional `team` "
                                   "and `experiment` keys (the flags win). Missing fields take their defaults.")
    p.add_argument("config", help="YAML file")
    p.add_argument("--team", help="team slug (default: the file's `team`, or your only team)")
    p.add_argument("--experiment", help="experiment name (default: the file's `experiment`)")


def _team(client: ApiClient, sub: Submission) -> str:
    """The submission's team, else the only team in which the user may submit runs.

    Raises:
        UsageError: no team given and not exactly one team to choose.
    """
    if sub.team:
        return sub.team
    teams = (client.get("/api/me/") or {}).get("teams") or []
    submitters = [t for t in teams if t.get("role") in ("member", "admin")]
    if len(submitters) == 1:
        return submitters[0]["slug"]
    names = ", ".join(f"{t.get('slug', '?')} ({t.get('role', '?')})" for t in teams) or "none"
    raise UsageError(f"no team given: pass --team or set `team:` in the file (your teams: {names})")


def server_field_errors(err: ApiError) -> list[tuple[str, str]]:
    """The 400's field errors with ``config.`` dropped, so that they name the YAML keys."""
    return [(f.removeprefix("config."), m) for f, m in err.fields]


def run(args: argparse.Namespace) -> int:
    """Submit; prints the run id and URL and returns 0.

    Raises:
        UsageError: unreadable file, invalid config (``fields`` holds one pair per
            error, from the local check or the server's 400), no team or experiment.
        ApiError: the server refused otherwise or could not be reached.
    """
    sub = load_submission(args.config, team=args.team, experiment=args.experiment)
    errors = local_errors(sub.config)
    if errors:
        raise UsageError(f"{args.config}: invalid config", fields=errors)
    if not sub.experiment:
        raise UsageError("no experiment given: pass --experiment or set `experiment:` in the file")
    client = connect()
    team = _team(client, sub)
    try:
        run_obj = client.post("/api/runs/", {"team": team, "experiment": sub.experiment, "config": sub.config})
    except ApiError as err:
        if err.status == 400 and err.fields:
            raise UsageError(f"{args.config}: refused by the server", fields=server_field_errors(err)) from None
        raise
    run_id = run_obj.get("id")
    console = make_console()
    console.print(f"Submitted run {run_id} ({team}/{sub.experiment}, {run_obj.get('state', 'queued')})",
                  markup=False)
    console.print(client.absolute(run_obj.get("url") or f"/runs/{run_id}/"), markup=False, highlight=False)
    return 0
