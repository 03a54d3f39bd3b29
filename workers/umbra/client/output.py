"""``--json``: one machine-readable JSON document on stdout and nothing else there.

Everything a command would print besides (notes, hints) goes to stderr when ``--json``
is given, so that ``umbra runs --json | jq`` always reads one document.
"""
from __future__ import annotations

import json
import math
import sys
from typing import Any


def add_json_flag(parser) -> None:
    """Add ``--json`` to a subcommand's parser."""
    parser.add_argument("--json", action="store_true",
                        help="print one JSON document on stdout (nothing else there) instead of text")


def _strict(value: Any) -> Any:
    """``value`` with NaN and infinities as None: strict JSON (jq, browsers) has no such numbers."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _strict(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_strict(v) for v in value]
    return value


def print_json(data: Any) -> None:
    """Write ``data`` as one indented JSON document and a newline on stdout. Non-ASCII
    characters are escaped, so that any stdout encoding can carry it."""
    sys.stdout.write(json.dumps(_strict(data), indent=2, ensure_ascii=True, default=str) + "\n")
    sys.stdout.flush()
