"""``umbra follow RUN``: a live progress bar of a run until it ends."""
from __future__ import annotations

import argparse
import time

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from umbra.client.api import ApiClient, ApiError
from umbra.client.commands.args import run_id
from umbra.client.errors import CliError, UsageError
from umbra.client.render import fmt_number, make_console, printable
from umbra.client.session import connect
from umbra.telemetry import catalog

# (metric, label, unit) shown next to the bar; label and unit from the metric catalogue.
METRICS = tuple((name, catalog.get(name).label, catalog.get(name).unit)
                for name in ("rollout/throughput_tok_s", "rollout/tail_time_s", "reward/mean", "train/loss"))
TERMINAL = ("succeeded", "failed", "cancelled")
# Consecutive failed polls (connection errors, 5xx) tolerated once the run was seen.
MAX_MISSED_POLLS = 30
MAX_REASON = 500  # characters of the failure reason printed


def add_parser(sub) -> None:
    """Add ``follow RUN [--interval S]``."""

    p = sub.add_parser("follow", help="follow a run's progress until it ends",
                       description="Exits 0 when the run succeeds, 1 when it fails or is cancelled.")
    p.add_argument("run", type=run_id, help="run id")
    p.add_argument("--interval", type=_interval, default=2.0, help="seconds between polls, 0.2 to 3600 (default 2)")


def _interval(value: str) -> float:
    """``--interval``: seconds between polls; argparse reports anything outside 0.2..3600."""
    try:
        seconds = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {value!r}") from None
    if not 0.2 <= seconds <= 3600:
        raise argparse.ArgumentTypeError("must be between 0.2 and 3600 seconds")
    return seconds


def latest_values(answer: dict) -> dict[str, float | None]:
    """The value at the highest x of each followed metric in a ``/metrics/`` answer
    (``{"series": {name: {"x": [...], "y": [...]}}}``); None where a metric has no point."""
    series = (answer or {}).get("series") or {}
    out: dict[str, float | None] = {}
    for name, _, _ in METRICS:
        xs, ys = (series.get(name) or {}).get("x") or [], (series.get(name) or {}).get("y") or []
        pairs = [(x, y) for x, y in zip(xs, ys) if x is not None]
        out[name] = max(pairs, key=lambda p: p[0])[1] if pairs else None
    return out


def metrics_line(latest: dict[str, float | None]) -> str:
    """``throughput 231.0 tok/s  tail time 12.00 s  reward 0.310  loss 0.012`` (metrics with
    no value yet are left out)."""
    parts = [f"{label} {fmt_number(latest.get(name))}{' ' + unit if unit else ''}" for name, label, unit in METRICS
             if latest.get(name) is not None]
    return "  ".join(parts)


def last_reason(client: ApiClient, run: int) -> str:
    """The reason of the run's last event on one line (at most ``MAX_REASON`` characters),
    or ``''`` (events are best effort)."""
    try:
        events = client.get(f"/api/runs/{run}/events/") or []
    except ApiError:
        return ""
    if isinstance(events, dict):  # tolerate a paginated answer
        events = events.get("results") or []
    reason = printable(" ".join(str(events[-1].get("reason") or "").split())) if events else ""
    return reason if len(reason) <= MAX_REASON else reason[: MAX_REASON - 1] + "…"


class _Poller:
    """One poll of the run and its metrics, tolerating brief outages after the first."""

    def __init__(self, client: ApiClient, run: int):
        self.client, self.run, self.missed, self.seen = client, run, 0, False

    def poll(self) -> tuple[dict | None, dict | None]:
        """``(run, metrics)``; ``(None, None)`` for a tolerated failure.

        Raises:
            ApiError: before the run was seen, for a 4xx, or after too many misses.
        """
        try:
            run = self.client.get(f"/api/runs/{self.run}/")
            names = ",".join(name for name, _, _ in METRICS)
            metrics = self.client.get(f"/api/runs/{self.run}/metrics/", {"names": names, "x": "step"})
        except ApiError as err:
            transient = err.status is None or err.status >= 500
            self.missed += 1
            if not self.seen or not transient or self.missed > MAX_MISSED_POLLS:
                raise err.with_prefix(f"run {self.run}") from None
            return None, None
        self.missed, self.seen = 0, True
        return run, metrics


def follow(client: ApiClient, run: int, interval: float, console=None) -> int:
    """Poll ``run`` every ``interval`` seconds with a progress bar until it ends.

    Returns 0 when it succeeded. Raises CliError (exit 1) with the last event's reason
    when it failed or was cancelled, ApiError when it cannot be read.
    """
    console = console or make_console()
    poller = _Poller(client, run)
    state = "?"
    columns = (TextColumn(f"run {run}"), TextColumn("{task.fields[state]}", markup=False), BarColumn(),
               MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("{task.fields[metrics]}", markup=False))
    run_obj, metrics = poller.poll()  # a run that cannot be read fails here, before any bar
    with Progress(*columns, console=console) as progress:
        task = progress.add_task("", total=None, state="…", metrics="")
        while True:
            if run_obj is None:
                progress.update(task, state="reconnecting…")
            else:
                state = str(run_obj.get("state") or "?")
                progress.update(task, total=run_obj.get("iterations_total"),
                                completed=run_obj.get("iterations_done") or 0,
                                state=state, metrics=metrics_line(latest_values(metrics)))
                if state in TERMINAL:
                    break
            time.sleep(interval)
            run_obj, metrics = poller.poll()
    if state == "succeeded":
        console.print(f"Run {run} succeeded.", style="green")
        return 0
    reason = last_reason(client, run)
    raise CliError(f"run {run} {state}" + (f": {reason}" if reason else ""))


def run(args: argparse.Namespace) -> int:
    """Follow ``args.run``; see :func:`follow`."""
    if not args.interval > 0:
        raise UsageError("--interval must be a positive number of seconds")
    return follow(connect(), args.run, args.interval)
