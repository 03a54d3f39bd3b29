"""``umbra show RUN``: one run's state, place in the queue, progress, latest metrics and
failure reason."""
from __future__ import annotations

import argparse

from umbra.client.api import ApiClient, ApiError, about_run
from umbra.client.commands.args import run_id
from umbra.client.commands.follow import (ITERATION_METRIC, MAX_POINTS, TERMINAL, elapsed_s, eta_s,
                                          iterations_done, last_reason, latest_values, metrics_line, points)
from umbra.client.output import add_json_flag, print_json
from umbra.client.render import MISSING, fmt_duration, fmt_time, make_console, printable, state_label
from umbra.client.session import connect
from umbra.telemetry import catalog

# The latest values shown (and given by --json): (metric, label, unit) from the catalogue.
KEY_METRICS = tuple((name, catalog.get(name).label, catalog.get(name).unit)
                    for name in ("rollout/throughput_tok_s", "rollout/tail_time_s", "rollout/spec/accept_len",
                                 "reward/mean", "reward/accuracy", "val/accuracy", "train/loss", "train/kl"))


def add_parser(sub) -> None:
    """Add ``show RUN [--json]``."""
    p = sub.add_parser("show", help="one run: state, queue position, progress, latest metrics, failure reason",
                       description="--json prints the run object of GET /api/runs/ID/ with `latest_metrics` "
                                   "(name: value at the highest step, or null), `elapsed_s`, `eta_s` and "
                                   "`reason` (the last event's, for a failed or cancelled run) added.")
    p.add_argument("run", type=run_id, help="run id")
    add_json_flag(p)


def details(client: ApiClient, run: int) -> dict:
    """The run object with ``latest_metrics``, ``elapsed_s``, ``eta_s`` and ``reason`` added.

    Raises:
        ApiError: ``no run N (or not visible to you)``, or the server's message.
    """
    try:
        run_obj = client.get(f"/api/runs/{run}/") or {}
        metrics = client.get(f"/api/runs/{run}/metrics/", {
            "names": ",".join([name for name, _, _ in KEY_METRICS] + [ITERATION_METRIC]), "x": "step",
            "max_points": MAX_POINTS})
    except ApiError as err:
        raise about_run(err, run) from None
    state = run_obj.get("state")
    done = iterations_done(run_obj, metrics)
    times = [y for _, y in points(metrics, ITERATION_METRIC)]
    # a queued run has not started: no elapsed time (created_at stands in for a run that ended unstarted)
    elapsed = None if state == "queued" else elapsed_s(run_obj)
    eta = None if state in TERMINAL or state == "queued" else eta_s(done, run_obj.get("iterations_total"),
                                                                     times, elapsed)
    reason = last_reason(client, run) if state in ("failed", "cancelled") else None
    return {**run_obj, "iterations_done": done, "latest_metrics": latest_values(metrics, metrics=KEY_METRICS),
            "elapsed_s": elapsed, "eta_s": eta, "reason": reason or None}


def render_lines(info: dict, url: str) -> list[str]:
    """The ``label  value`` lines of ``umbra show``."""
    total = info.get("iterations_total")
    progress = f"{info.get('iterations_done') or 0}/{'?' if total is None else total} iterations"
    if info.get("elapsed_s") is not None:
        progress += f", elapsed {fmt_duration(info['elapsed_s'])}"
    if info.get("eta_s") is not None:
        progress += f", eta {fmt_duration(info['eta_s'])}"
    created = fmt_time(info.get("created_at")) + (f" by {info['created_by']}" if info.get("created_by") else "")
    rows = [("state", state_label(info.get("state"), info.get("queue_position")))]
    if info.get("state") == "queued":
        position = info.get("queue_position")
        rows.append(("queue", f"position {position}" if position is not None else "position unknown"))
    rows += [("experiment", f"{info.get('team', '?')}/{info.get('experiment', '?')}"),
             ("team", str(info.get("team") or MISSING)), ("policy", str(info.get("policy") or MISSING)),
             ("model", str(info.get("model") or MISSING)), ("progress", progress),
             ("created", created), ("started", fmt_time(info.get("started_at"))),
             ("finished", fmt_time(info.get("finished_at")))]
    values = info.get("latest_metrics") or {}
    shown = metrics_line(values, KEY_METRICS)
    rows.append(("metrics", shown or "none yet"))
    if info.get("reason"):
        rows.append(("reason", str(info["reason"])))
    rows.append(("url", url))
    width = max(len(label) for label, _ in rows)
    return [f"Run {info.get('id')}"] + [f"  {label:<{width}}  {printable(value)}" for label, value in rows]


def run(args: argparse.Namespace) -> int:
    """Print the run (``--json``: see :func:`add_parser`); returns 0. Raises ApiError."""
    client = connect()
    info = details(client, args.run)
    if args.json:
        print_json(info)
        return 0
    console = make_console()
    for line in render_lines(info, client.absolute(info.get("url") or f"/runs/{args.run}/")):
        console.print(line, markup=False, highlight=False)
    return 0
