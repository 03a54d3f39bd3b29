"""Formatting shared by the commands: the console, numbers, ratios, times, states.

Cells built from server data go through :func:`text` so that ``[...]`` in a name
is shown as written, never read as rich markup.
"""
from __future__ import annotations

import json
import math
import os
import re
import sys
import unicodedata
from datetime import datetime, timezone

from rich.console import Console
from rich.text import Text

MISSING = "–"
STATE_STYLES = {"queued": "dim", "dispatching": "cyan", "running": "blue", "succeeded": "green",
                "failed": "red", "cancelled": "yellow"}


def make_console(file=None) -> Console:
    """A rich console on ``file`` (default stdout, looked up at print time). When the
    output is not a terminal it is ``$COLUMNS`` (default 200) wide, so tables written to
    a pipe or a file are not squeezed to 80 columns."""
    stream = file if file is not None else sys.stdout
    width = None
    if not (hasattr(stream, "isatty") and stream.isatty()):
        try:
            width = int(os.environ.get("COLUMNS", "200"))
        except ValueError:
            width = 200
    return Console(file=file, width=width, highlight=False, soft_wrap=False)


def printable(value: str) -> str:
    """``value`` with control characters (terminal escapes, newlines) shown as ``?``:
    names come from other users and must not drive this terminal."""
    return "".join("?" if unicodedata.category(c) in ("Cc", "Cf") else c for c in value)


# Terminal escape sequences (colours, cursor moves: CSI ... final byte; OSC ... BEL/ST) that
# Ray and vLLM write into job logs: dropped, as the run page's log view drops them.
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\))")


def printable_log(value: str) -> str:
    """A log as text to print: terminal colour and cursor sequences dropped, lines and tabs
    kept, other control characters (a lone escape, carriage returns) shown as ``?``."""
    value = _ANSI.sub("", value)
    return "\n".join(printable(line.replace("\t", "    ")) for line in value.replace("\r\n", "\n").split("\n"))


def text(value, style: str = "") -> Text:
    """``value`` as a rich ``Text`` (no markup, no control characters); None becomes ``–``."""
    return Text(MISSING if value is None else printable(str(value)), style=style)


def fmt_number(value) -> str:
    """A metric value for a table: integers as such, floats with 1 to 3 decimals by
    magnitude (``231.0``, ``12.35``, ``0.310``); None or NaN as ``–``."""
    if value is None or isinstance(value, bool):
        return MISSING if value is None else str(value)
    if isinstance(value, int):
        return str(value)
    try:
        v = float(value)
    except (TypeError, ValueError):
        return str(value)
    if math.isnan(v):
        return MISSING
    if v.is_integer() and abs(v) >= 1e6:
        return f"{v:.0f}"
    if abs(v) >= 100:
        return f"{v:.1f}"
    if abs(v) >= 1:
        return f"{v:.2f}"
    return f"{v:.3f}"


def fmt_ratio(ratio) -> str:
    """A ratio to the reference: ``1.02x``; ``''`` for None."""
    if ratio is None:
        return ""
    try:
        return f"{float(ratio):.2f}x"
    except (TypeError, ValueError):
        return ""


def fmt_with_ratio(value, ratio) -> str:
    """``231.0 (1.02x)``; just the value when the ratio is None; ``–`` for no value."""
    shown = fmt_number(value)
    r = fmt_ratio(ratio)
    return f"{shown} ({r})" if r and value is not None else shown


def fmt_time(iso: str | None, seconds: bool = False) -> str:
    """An ISO-8601 timestamp as local ``YYYY-MM-DD HH:MM`` (``:SS`` with ``seconds``: an
    event log's steps are seconds apart); ``–`` for None; the input unchanged when it does
    not parse."""
    if not iso:
        return MISSING
    try:
        return datetime.fromisoformat(iso.replace("Z", "+00:00")).astimezone().strftime(
            "%Y-%m-%d %H:%M:%S" if seconds else "%Y-%m-%d %H:%M")
    except (TypeError, ValueError):
        return str(iso)


def parse_time(iso: str | None) -> datetime | None:
    """An ISO-8601 timestamp of the API as an aware datetime; None for None or one that
    does not parse (a naive one is taken as UTC)."""
    if not iso:
        return None
    try:
        t = datetime.fromisoformat(str(iso).replace("Z", "+00:00"))
    except (TypeError, ValueError):
        return None
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def fmt_duration(seconds: float | None) -> str:
    """Seconds as ``H:MM:SS`` (``0:01:23``; days add to the hours); ``–`` for None."""
    if seconds is None or isinstance(seconds, bool):
        return MISSING
    try:
        s = float(seconds)
    except (TypeError, ValueError):
        return MISSING
    if not math.isfinite(s):
        return MISSING
    total = int(round(max(s, 0.0)))
    return f"{total // 3600}:{total // 60 % 60:02d}:{total % 60:02d}"


def fmt_value(value) -> str:
    """A config value as written in YAML-ish JSON: strings bare, others as JSON."""
    if value is None:
        return "null"
    return value if isinstance(value, str) else json.dumps(value)


def state_label(state: str | None, queue_position=None) -> str:
    """``queued (#2)`` for a queued run with a known place in the queue, else the state."""
    if state == "queued" and isinstance(queue_position, int) and not isinstance(queue_position, bool):
        return f"queued (#{queue_position})"
    return MISSING if state is None else str(state)


def state_text(state: str | None, queue_position=None) -> Text:
    """The run state (with its queue position when queued), coloured by outcome."""
    return text(state_label(state, queue_position), STATE_STYLES.get(state or "", ""))


def fmt_iterations(done, total) -> str:
    """``2/3``; ``?`` for an unknown part."""
    return f"{'?' if done is None else done}/{'?' if total is None else total}"
