"""The text the API takes, as regular expressions for the schema's ``pattern``: the same
characters the serializers refuse (DRF refuses NUL everywhere; ``printable_name`` refuses
control and format characters, Unicode categories Cc and Cf)."""
from __future__ import annotations

import unicodedata

# The Basic Multilingual Plane only: the ~100 format characters beyond it (Kaithi, Egyptian
# and shorthand format controls, musical beams, tag characters) are refused by the server
# but have no escape that ECMA-262 (the schema's dialect) and Python (schemathesis, which
# rewrites a pattern it bounds by maxLength) both read.
_BMP = range(0x10000)


def _escape(cp: int) -> str:
    return f"\\u{cp:04x}"  # the same in ECMA-262 and Python


def _char_class(code_points) -> str:
    ranges: list[list[int]] = []
    for cp in code_points:
        if ranges and cp == ranges[-1][1] + 1:
            ranges[-1][1] = cp
        else:
            ranges.append([cp, cp])
    return "".join(_escape(a) if a == b else f"{_escape(a)}-{_escape(b)}" for a, b in ranges)


NUL = _char_class([0])
CONTROL = _char_class(cp for cp in _BMP if unicodedata.category(chr(cp)) in ("Cc", "Cf"))


def pattern(refused: str, non_blank: bool) -> str:
    """Anything but the ``refused`` characters; ``non_blank``: with one that is not whitespace
    (DRF trims whitespace, then refuses a blank value)."""
    if non_blank:
        return f"^[^{refused}]*[^\\s{refused}][^{refused}]*$"
    return f"^[^{refused}]*$"
