"""``umbra submit config.yaml``: validate a run config locally, then submit it."""
from __future__ import annotations

import argparse

from umbra.client.api import ApiClient, ApiError
from umbra.client.errors import CliError, UsageError
from umbra.client.output import add_json_flag, print_json
from umbra.client.render import fmt_value, make_console, printable, state_label
from umbra.client.session import connect
from umbra.client.submission import Submission, load_submission, local_errors


def add_parser(sub) -> None:
    """Add ``submit CONFIG [--team SLUG] [--experiment NAME] [--dry-run] [--json]``."""
    p = sub.add_parser("submit", help="submit a run from a YAML file of RunConfig fields",
                       description="The YAML holds RunConfig fields at the top level, plus optional `team` "
                                   "and `experiment` keys (the flags win). Missing fields take their defaults.")
    p.add_argument("config", help="YAML file")
    p.add_argument("--team", help="team slug (default: the file's `team`, or your only team)")
    p.add_argument("--experiment", help="experiment name (default: the file's `experiment`)")
    p.add_argument("--dry-run", action="store_true",
                   help="let the server check the config and print it normalised (defaults filled in) and "
                        "the queue position the run would get; stores nothing")
    add_json_flag(p)


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


def _undo_stored_run(client: ApiClient, answer: dict) -> CliError:
    """A server without dry runs ignores ``?dry_run=1`` and stores the run: cancel it and
    say so (the error to raise)."""
    run_id = answer.get("id")
    if run_id is None:
        return CliError(f"{client.url} did not answer the dry run as one (no `dry_run: true` in its answer)")
    try:
        client.post(f"/api/runs/{run_id}/cancel/")
        undone = "it was cancelled"
    except ApiError as err:
        undone = f"cancelling it failed: {err.message}"
    return CliError(f"{client.url} does not support --dry-run: it stored the submission as run {run_id} "
                    f"({undone})")


def print_dry_run(answer: dict, console) -> None:
    """``Dry run: alpha/exp would be queued at position 3; nothing was stored.`` and the
    normalised config, one ``key: value`` line each."""
    where = f"{answer.get('team', '?')}/{answer.get('experiment', '?')}"
    position = answer.get("queue_position")
    queued = f"queued at position {position}" if position is not None else "queued"
    console.print(f"Dry run: {printable(where)} would be {queued}; nothing was stored.", markup=False)
    console.print("Config (normalised):", markup=False)
    for key, value in (answer.get("config") or {}).items():
        shown = '""' if value == "" else printable(fmt_value(value))
        console.print(f"  {printable(str(key))}: {shown}", markup=False, highlight=False, soft_wrap=True)


def run(args: argparse.Namespace) -> int:
    """Submit; prints the run id and URL (``--json``: the run object) and returns 0. With
    ``--dry-run`` the server checks and normalises the config but stores nothing: prints
    that config and the queue position the run would get (``--json``: the server's answer).

    Raises:
        UsageError: unreadable file, invalid config (``fields`` holds one pair per
            error, from the local check or the server's 400), no team or experiment.
        ApiError: ``no team 'x' (or you are not a member of it)`` for an unknown team;
            the server refused otherwise (403 a viewer, 429 a limit) or could not be reached.
        CliError: ``--dry-run`` against a server that stored the run anyway.
    """
    sub = load_submission(args.config, team=args.team, experiment=args.experiment)
    errors = local_errors(sub.config)
    if errors:
        raise UsageError(f"{args.config}: invalid config", fields=errors)
    if not sub.experiment:
        raise UsageError("no experiment given: pass --experiment or set `experiment:` in the file")
    client = connect()
    team = _team(client, sub)
    body = {"team": team, "experiment": sub.experiment, "config": sub.config}
    try:
        run_obj = client.post("/api/runs/", body, params={"dry_run": 1} if args.dry_run else None) or {}
    except ApiError as err:
        if err.status == 400 and err.fields:
            raise UsageError(f"{args.config}: refused by the server", fields=server_field_errors(err)) from None
        raise err.naming(f"team {team!r}", "or you are not a member of it") from None
    console = make_console()
    if args.dry_run:
        if run_obj.get("dry_run") is not True:
            raise _undo_stored_run(client, run_obj)
        if args.json:
            print_json(run_obj)
        else:
            print_dry_run(run_obj, console)
        return 0
    if args.json:
        print_json(run_obj)
        return 0
    run_id = run_obj.get("id")
    state = state_label(run_obj.get("state") or "queued", run_obj.get("queue_position"))
    console.print(f"Submitted run {run_id} ({printable(team)}/{printable(sub.experiment)}, {printable(state)})",
                  markup=False)
    console.print(client.absolute(run_obj.get("url") or f"/runs/{run_id}/"), markup=False, highlight=False)
    return 0
