"""Filters of the runs table and run page (ours): durations and key numbers as people read them."""
from __future__ import annotations

import datetime as dt
import math

from django import template

register = template.Library()


@register.filter
def duration(value) -> str:
    """``3725`` s (or a timedelta) -> ``1h 02m``; ``95`` -> ``1m 35s``; None -> ``—``."""
    if value is None or value == "":
        return "—"
    seconds = value.total_seconds() if isinstance(value, dt.timedelta) else float(value)
    seconds = max(0, int(round(seconds)))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    if h >= 24:
        return f"{h // 24}d {h % 24:02d}h"
    if h:
        return f"{h}h {m:02d}m"
    return f"{m}m {s:02d}s" if m else f"{s}s"


@register.filter
def number(value) -> str:
    """A metric value as the pages' ``formatNumber`` prints it (frontend/src/format.ts):
    231.0, 12.35, 0.312; None -> ``—``."""
    if value is None:
        return "—"
    v = float(value)
    a = abs(v)
    if a == 0:
        return "0"
    if a >= 1e6 or a < 1e-3:
        return f"{v:.2e}"
    if a >= 100:
        return f"{v:.1f}"
    if a >= 1:
        return f"{v:.2f}"
    return f"{v:.{2 - math.floor(math.log10(a))}f}"  # toPrecision(3)
