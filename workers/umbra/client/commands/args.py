"""argparse types the subcommands share."""
from __future__ import annotations

import argparse


def run_id(value: str) -> int:
    """argparse type of a run id: a positive integer (``#7`` is accepted)."""
    try:
        rid = int(value.strip().lstrip("#"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid run id {value!r}") from None
    if rid < 1:
        raise argparse.ArgumentTypeError(f"invalid run id {value!r}")
    return rid
