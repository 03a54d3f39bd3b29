"""``umbra follow RUN``: a run's progress until it ends.

On a terminal: a live progress bar. Otherwise (a CI log, ``| tee``, a file): one plain line
per iteration (no carriage returns, no colours), plus one per change of state. Both count
the elapsed time from the run's start (its ``started_at``, else ``created_at``), not from
when ``follow`` began, and show an ETA: the iterations left times the mean iteration time
so far (``iteration/time_s``; the elapsed time per iteration done while it has no point).
"""
from __future__ import annotations

import argparse
import time
from datetime import datetime, timezone

from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TextColumn
from rich.text import Text

from umbra.client.api import ApiClient, ApiError
from umbra.client.commands.args import run_id
from umbra.client.errors import CliError, UsageError
from umbra.client.render import fmt_duration, fmt_number, make_console, parse_time, printable, state_label
from umbra.client.session import connect
from umbra.telemetry import catalog

# (metric, label, unit) shown next to the bar; label and unit from the metric catalogue.
METRICS = tuple((name, catalog.get(name).label, catalog.get(name).unit)
                for name in ("rollout/throughput_tok_s", "rollout/tail_time_s", "reward/mean", "train/loss"))
ITERATION_METRIC = catalog.ITERATION_METRIC  # one point per finished iteration: its wall time
TERMINAL = ("succeeded", "failed", "cancelled")
# Consecutive failed polls (connection errors, 5xx) tolerated once the run was seen.
MAX_MISSED_POLLS = 30
MAX_REASON = 500  # characters of the failure reason printed
MAX_POINTS = 5000  # the API's limit: the series of up to this many iterations come whole


def add_parser(sub) -> None:
    """Add ``follow RUN [--interval S]``."""

    p = sub.add_parser("follow", help="follow a run's progress until it ends",
                       description="On a terminal: a progress bar. Otherwise (a CI log, a pipe, a file): one "
                                   "line per iteration. Elapsed time counts from the run's start; the ETA is "
                                   "the iterations left times the mean iteration time so far. Exits 0 when the "
                                   "run succeeds, 1 when it fails or is cancelled; Ctrl-C leaves it running.")
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


def points(answer: dict | None, name: str) -> list[tuple[float, float]]:
    """The ``(x, y)`` points of ``name`` in a ``/metrics/`` answer
    (``{"series": {name: {"x": [...], "y": [...]}}}``), by x."""
    series = ((answer or {}).get("series") or {}).get(name) or {}
    return sorted((x, y) for x, y in zip(series.get("x") or [], series.get("y") or []) if x is not None)


def latest_values(answer: dict, upto: float | None = None, metrics=METRICS) -> dict[str, float | None]:
    """The value at the highest x (at most ``upto`` when given) of each of ``metrics``
    (``(name, label, unit)`` triples) in a ``/metrics/`` answer; None where a metric has no
    such point."""
    out: dict[str, float | None] = {}
    for name, _, _ in metrics:
        pairs = [p for p in points(answer, name) if upto is None or p[0] <= upto]
        out[name] = pairs[-1][1] if pairs else None
    return out


def metrics_line(latest: dict[str, float | None], metrics=METRICS) -> str:
    """``throughput 231.0 tok/s  tail time 12.00 s  reward 0.310  loss 0.012`` (metrics with
    no value yet are left out)."""
    parts = [f"{label} {fmt_number(latest.get(name))}{' ' + unit if unit else ''}" for name, label, unit in metrics
             if latest.get(name) is not None]
    return "  ".join(parts)


def run_start(run: dict) -> datetime | None:
    """When the run started (``started_at``), else when it was submitted (``created_at``)."""
    return parse_time(run.get("started_at")) or parse_time(run.get("created_at"))


def elapsed_s(run: dict, now: datetime | None = None) -> float | None:
    """Seconds from the run's start to ``now`` (to ``finished_at`` once it ended); None
    when the run has no start time."""
    start = run_start(run)
    if start is None:
        return None
    end = parse_time(run.get("finished_at")) if run.get("state") in TERMINAL else None
    end = end or now or datetime.now(timezone.utc)
    return max((end - start).total_seconds(), 0.0)


def eta_s(done: int, total, iteration_times: list[float], elapsed: float | None) -> float | None:
    """Seconds left: ``(total - done)`` times the mean of ``iteration_times`` (the wall
    times of the iterations so far), else the elapsed time per iteration done; None when
    neither is known or the total is not."""
    if not isinstance(total, int) or isinstance(total, bool):
        return None
    times = [t for t in iteration_times if t is not None]
    if times:
        mean = sum(times) / len(times)
    elif done > 0 and elapsed is not None:
        mean = elapsed / done
    else:
        return None
    return max(total - done, 0) * mean


def iterations_done(run: dict, metrics: dict | None) -> int:
    """Finished iterations: the run's count, or the points of ``iteration/time_s`` when
    the series (read after the run) already has more."""
    return max(int(run.get("iterations_done") or 0), len(points(metrics, ITERATION_METRIC)))


def iteration_line(run: dict, metrics: dict | None, k: int, walls: list[float] | None = None,
                   now: datetime | None = None) -> str:
    """The plain line of iteration ``k`` (1-based) of ``run``: ``run 7  iteration 2/3
    elapsed 0:01:23  eta 0:00:40  throughput 231.0 tok/s  reward 0.310``. The metric values
    are those at that iteration's step (the latest ones when the series lacks it); elapsed
    runs from the run's start to when the iteration's point came (``walls``: the Unix
    times of the ``iteration/time_s`` points, by step), else to ``now``; the ETA is the
    one of that moment, left out once the run has ended and for the last iteration."""
    total = run.get("iterations_total")
    steps = points(metrics, ITERATION_METRIC)
    step = steps[k - 1][0] if k <= len(steps) else None
    times = [y for _, y in (steps[:k] if step is not None else steps)]
    start = run_start(run)
    if walls and k <= len(walls) and start is not None:
        elapsed = max(walls[k - 1] - start.timestamp(), 0.0)
    else:
        elapsed = elapsed_s(run, now)
    parts = [f"run {run.get('id')}", f"iteration {k}/{'?' if total is None else total}",
             f"elapsed {fmt_duration(elapsed)}"]
    eta = eta_s(k, total, times, elapsed)
    if eta is not None and eta > 0 and not (run.get("state") in TERMINAL and k == total):
        parts.append(f"eta {fmt_duration(eta)}")
    shown = metrics_line(latest_values(metrics or {}, upto=step))
    return "  ".join(parts + ([shown] if shown else []))


def state_line(run: dict, metrics: dict | None = None, now: datetime | None = None) -> str:
    """The plain line of a change of state: ``run 7  queued (#2)``, ``run 7  running
    iteration 0/3  elapsed 0:00:05`` and the latest metrics, if any."""
    total = run.get("iterations_total")
    parts = [f"run {run.get('id')}", printable(state_label(run.get("state"), run.get("queue_position")))]
    if run.get("state") != "queued":
        parts += [f"iteration {iterations_done(run, metrics)}/{'?' if total is None else total}",
                  f"elapsed {fmt_duration(elapsed_s(run, now))}"]
    shown = metrics_line(latest_values(metrics or {}))
    return "  ".join(parts + ([shown] if shown else []))


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

    def poll(self, walls: bool = False) -> tuple[dict | None, dict | None, list[float] | None]:
        """``(run, metrics, iteration walls)``; the last, with ``walls``, the Unix times of
        the ``iteration/time_s`` points by step (else None); ``(None, None, None)`` for a
        tolerated failure.

        Raises:
            ApiError: before the run was seen, for a 4xx, or after too many misses.
        """
        try:
            run = self.client.get(f"/api/runs/{self.run}/")
            names = ",".join([name for name, _, _ in METRICS] + [ITERATION_METRIC])
            metrics = self.client.get(f"/api/runs/{self.run}/metrics/",
                                      {"names": names, "x": "step", "max_points": MAX_POINTS})
            times = None
            if walls:
                by_wall = self.client.get(f"/api/runs/{self.run}/metrics/",
                                          {"names": ITERATION_METRIC, "x": "wall", "max_points": MAX_POINTS})
                times = [x for x, _ in points(by_wall, ITERATION_METRIC)]
        except ApiError as err:
            transient = err.status is None or err.status >= 500
            self.missed += 1
            if not self.seen or not transient or self.missed > MAX_MISSED_POLLS:
                if err.status == 404:
                    raise err.naming(f"run {self.run}") from None
                raise err.with_prefix(f"run {self.run}") from None
            return None, None, None
        self.missed, self.seen = 0, True
        return run, metrics, times


class _SinceStartColumn(ProgressColumn):
    """Time since the run's start (``task.fields["start"]``, Unix seconds), ticking between
    polls; frozen at ``task.fields["end"]`` once the run ended."""

    def render(self, task) -> Text:
        start, end = task.fields.get("start"), task.fields.get("end")
        if start is None:
            return Text("-:--:--", style="progress.elapsed")
        return Text(fmt_duration((end or time.time()) - start), style="progress.elapsed")


def _follow_bar(poller: _Poller, run: int, interval: float, console) -> str:
    """The terminal view: a live bar until the run ends; returns its last state."""
    state = "?"
    columns = (TextColumn(f"run {run}"), TextColumn("{task.fields[state]}", markup=False), BarColumn(),
               MofNCompleteColumn(), _SinceStartColumn(), TextColumn("{task.fields[eta]}", markup=False),
               TextColumn("{task.fields[metrics]}", markup=False))
    run_obj, metrics, _ = poller.poll()  # a run that cannot be read fails here, before any bar
    with Progress(*columns, console=console) as progress:
        task = progress.add_task("", total=None, state="…", metrics="", eta="", start=None, end=None)
        while True:
            if run_obj is None:
                progress.update(task, state="reconnecting…")
            else:
                state = str(run_obj.get("state") or "?")
                done, total = iterations_done(run_obj, metrics), run_obj.get("iterations_total")
                start = run_start(run_obj)
                elapsed = elapsed_s(run_obj)
                finished = parse_time(run_obj.get("finished_at")) if state in TERMINAL else None
                eta = None if state in TERMINAL else eta_s(done, total, [y for _, y in points(metrics, ITERATION_METRIC)],
                                                           elapsed)
                progress.update(task, total=total, completed=done,
                                state=printable(state_label(state, run_obj.get("queue_position"))),
                                metrics=metrics_line(latest_values(metrics)),
                                eta=f"eta {fmt_duration(eta)}" if eta else "",
                                start=start.timestamp() if start else None,
                                end=(finished.timestamp() if finished else time.time()) if state in TERMINAL else None)
                if state in TERMINAL:
                    break
            time.sleep(interval)
            run_obj, metrics, _ = poller.poll()
    return state


def _follow_lines(poller: _Poller, interval: float, out) -> str:
    """The view for logs and pipes: one line per iteration (those done before it started
    too) and one per change of state, flushed as written; returns the last state."""
    printed, shown_state, outage, state = 0, None, False, "?"
    run_obj, metrics, walls = poller.poll(walls=True)
    while True:
        if run_obj is None:
            if not outage:
                print(f"run {poller.run}  server not answering; retrying", file=out, flush=True)
            outage = True
        else:
            outage = False
            state = str(run_obj.get("state") or "?")
            label = state_label(state, run_obj.get("queue_position"))
            if label != shown_state and state not in TERMINAL:
                print(state_line(run_obj, metrics), file=out)
            done = iterations_done(run_obj, metrics)
            for k in range(printed + 1, done + 1):
                print(iteration_line(run_obj, metrics, k, walls), file=out)
            printed = max(printed, done)
            if label != shown_state and state in TERMINAL:
                print(state_line(run_obj, metrics), file=out)
            shown_state = label
            out.flush()
            if state in TERMINAL:
                return state
        time.sleep(interval)
        run_obj, metrics, walls = poller.poll(walls=True)


def follow(client: ApiClient, run: int, interval: float, console=None) -> int:
    """Poll ``run`` every ``interval`` seconds until it ends: a progress bar on a terminal,
    plain lines otherwise.

    Returns 0 when it succeeded. Raises CliError (exit 1) with the last event's reason
    when it failed or was cancelled, ApiError when it cannot be read.
    """
    console = console or make_console()
    poller = _Poller(client, run)
    # the stream itself, not rich's guess: FORCE_COLOR (set in many CI systems) must not draw a bar in a log
    tty = bool(getattr(console.file, "isatty", None) and console.file.isatty())
    if tty:
        state = _follow_bar(poller, run, interval, console)
    else:
        state = _follow_lines(poller, interval, console.file)
    if state == "succeeded":
        if tty:
            console.print(f"Run {run} succeeded.", style="green")
        else:
            print(f"Run {run} succeeded.", file=console.file, flush=True)
        return 0
    reason = last_reason(client, run)
    raise CliError(f"run {run} {state}" + (f": {reason}" if reason else ""))


def run(args: argparse.Namespace) -> int:
    """Follow ``args.run``; see :func:`follow`."""
    if not args.interval > 0:
        raise UsageError("--interval must be a positive number of seconds")
    return follow(connect(), args.run, args.interval)
