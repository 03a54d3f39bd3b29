"""The name of one installation of the platform, derived from its database.

Two platforms on one machine usually share its Redis; their Celery queue and their
Channels/cache key prefix default to this name so that neither takes the other's tasks
or reads the other's cached series (``UMBRA_CELERY_QUEUE`` / ``UMBRA_CHANNEL_PREFIX`` /
``UMBRA_INSTALLATION`` override it). Platforms on one database are one installation.
"""
from __future__ import annotations

import re

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def installation_name(database: dict) -> str:
    """``umbra`` for the PostgreSQL database ``umbra`` on the default port (the compose
    stack's), ``umbra-<name>[-<port>]`` for other databases (the settings accept
    PostgreSQL only)."""
    name = str(database.get("NAME") or "")
    slug = _UNSAFE.sub("-", name).strip("-") or "db"
    base = slug if slug == "umbra" or slug.startswith("umbra-") else f"umbra-{slug}"
    port = str(database.get("PORT") or "")
    return base if port in ("", "5432") else f"{base}-{port}"
