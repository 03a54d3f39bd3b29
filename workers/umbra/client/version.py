"""The installed version of the ``umbra`` distribution (pyproject.toml's ``[project] name``)."""
from __future__ import annotations

from importlib import metadata

DISTRIBUTION = "umbra"


def package_version() -> str:
    """The version pip installed (``0.1.0``), or ``unknown`` when ``umbra`` runs from a
    source tree that was never installed (``pip install -e .`` records it)."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return "unknown"
