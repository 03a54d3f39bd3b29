"""Path checks on user-given names."""
from __future__ import annotations

from pathlib import Path


def is_file(name: str) -> bool:
    """Whether ``name`` names an existing file; False (not an error) for an empty name or
    one the file system rejects (e.g. longer than it allows)."""
    try:
        return bool(name) and Path(name).is_file()
    except (OSError, ValueError):
        return False
