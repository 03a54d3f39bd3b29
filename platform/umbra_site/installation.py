"""The name of one installation of the platform, derived from its database.

Two platforms on one machine usually share its Redis; their Celery queue and their
Channels/cache key prefix default to this name so that neither takes the other's tasks
or reads the other's cached series (``UMBRA_CELERY_QUEUE`` / ``UMBRA_CHANNEL_PREFIX`` /
``UMBRA_INSTALLATION`` override it). Platforms on one database are one installation.
"""
from __future__ import annotations

import hashlib
import re

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def installation_name(database: dict) -> str:
    """``umbra`` for the database ``umbra`` on port 5432 (the compose stack's and the
    demo's), else ``umbra-<name>-<hash>``: the name for people, a hash of host, port and
    name so that databases whose names read alike (``x`` and ``umbra-x``, ``a b`` and
    ``a-b``, one name on two hosts) never share a queue."""
    name, host = str(database.get("NAME") or ""), str(database.get("HOST") or "")
    port = str(database.get("PORT") or "5432")
    if name == "umbra" and port == "5432":
        return "umbra"
    slug = _UNSAFE.sub("-", name).strip("-")[:40] or "db"
    digest = hashlib.sha256(f"{host}:{port}/{name}".encode()).hexdigest()[:8]
    return f"umbra-{slug}-{digest}"
