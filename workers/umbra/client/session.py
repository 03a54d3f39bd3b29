"""The API client of the logged-in user."""
from __future__ import annotations

from umbra.client import credentials
from umbra.client.api import ApiClient


def connect() -> ApiClient:
    """An :class:`ApiClient` on the stored (or ``UMBRA_URL``/``UMBRA_TOKEN``) credentials.

    Raises:
        CliError: not logged in (the message says to run ``umbra login``).
    """
    creds = credentials.load()
    return ApiClient(creds.url, creds.token)
