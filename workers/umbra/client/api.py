"""A small HTTP client of the platform's REST API (docs/api.md) on ``requests``.

Every failure becomes an :class:`ApiError` whose message is the server's own
(``{"detail": ...}`` or the field errors) or says why the server was not reached.
"""
from __future__ import annotations

import re
from typing import Any

import requests

from umbra.client.errors import EXIT_SERVER, EXIT_USAGE, CliError, flatten_field_errors

USER_AGENT = "umbra-cli/0.1"
TIMEOUT_S = (10.0, 60.0)  # connect, read


class ApiError(CliError):
    """A refused or failed API call.

    ``status`` is the HTTP status (None when no response came), ``payload`` the decoded
    JSON body (or None), ``fields`` the ``(field, message)`` pairs of a 400. A 400 exits
    with code 2 (the user's input), anything else with 1.
    """

    def __init__(self, message: str, status: int | None = None, payload: Any = None,
                 fields: list[tuple[str, str]] | None = None):
        super().__init__(message, EXIT_USAGE if status == 400 else EXIT_SERVER, fields)
        self.status = status
        self.payload = payload

    def naming(self, what: str, hint: str = "or not visible to you") -> "ApiError":
        """For a 404, replace the message with ``no <what> (<hint>)``, e.g. ``no run 42
        (or not visible to you)``; other errors are left as they are. Returns self."""
        if self.status == 404:
            self.message = f"no {what} ({hint})" if hint else f"no {what}"
            self.args = (self.message,)
        return self


def _short_reason(exc: Exception) -> str:
    """The useful tail of a requests exception (``[Errno 111] Connection refused``)."""
    text = str(exc)
    m = re.search(r"\[Errno -?\d+\] [^'\")]+", text)
    if m:
        return m.group(0).strip()
    return type(exc).__name__


def error_from_response(resp: requests.Response) -> ApiError:
    """An :class:`ApiError` for a 4xx/5xx response, its message taken from the body.

    ``{"detail": "x"}`` gives ``x``; field errors give ``field: message; ...`` with the
    pairs in ``fields`` (``non_field_errors`` lose their field name); anything else
    (an HTML error page) gives ``HTTP <status> <reason>``.
    """
    status = resp.status_code
    try:
        payload = resp.json()
    except ValueError:
        payload = None
    fields: list[tuple[str, str]] = []
    if isinstance(payload, dict) and isinstance(payload.get("detail"), str):
        message = payload["detail"]
    elif isinstance(payload, (dict, list)) and payload:
        fields = [("" if f.split(".")[-1] in ("non_field_errors", "detail") else f, m)
                  for f, m in flatten_field_errors(payload)]
        message = "; ".join(f"{f}: {m}" if f else m for f, m in fields)
    else:
        message = f"HTTP {status} {resp.reason or ''}".strip()
        if status >= 500:
            message = f"server error ({message})"
    if status == 401:
        message = f"{message} (run `umbra login`)"
    elif status == 404 and "not found" not in message.lower():
        message = f"not found ({message})"
    return ApiError(message, status=status, payload=payload, fields=fields)


def about_run(err: ApiError, run: int) -> ApiError:
    """A failed call about run ``run``: ``no run 42 (or not visible to you)`` for a 404,
    else the server's message prefixed ``run 42: ``. Returns ``err``."""
    if err.status == 404:
        return err.naming(f"run {run}")
    return err.with_prefix(f"run {run}")


class ApiClient:
    """Calls ``<url>/api/...`` with ``Authorization: Token <token>`` when a token is set.

    Methods return the decoded JSON body (None for an empty one) and raise
    :class:`ApiError` for 4xx/5xx answers, non-JSON answers and connection failures.
    """

    def __init__(self, url: str, token: str = "", timeout: tuple[float, float] = TIMEOUT_S):
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.session = requests.Session()
        self.session.headers.update({"Accept": "application/json", "User-Agent": USER_AGENT})
        if token:
            self.session.headers["Authorization"] = f"Token {token}"

    def absolute(self, path: str) -> str:
        """``path`` (e.g. a run's ``url``) as an absolute URL on this server."""
        if "://" in path:
            return path
        return f"{self.url}/{path.lstrip('/')}"

    def request(self, method: str, path: str, params: dict | None = None, json: Any = None) -> Any:
        """Send one request to ``path`` (relative to the base URL, e.g. ``/api/runs/``);
        ``params`` with None values are left out. Returns the JSON body or None.

        Raises:
            ApiError: connection failure, timeout, 4xx/5xx, or a body that is not JSON.
        """
        url = self.absolute(path)
        params = {k: v for k, v in (params or {}).items() if v is not None}
        try:
            resp = self.session.request(method, url, params=params, json=json, timeout=self.timeout)
        except (requests.exceptions.MissingSchema, requests.exceptions.InvalidSchema,
                requests.exceptions.InvalidURL) as exc:
            raise CliError(f"invalid server URL {self.url!r}: {exc}", EXIT_USAGE) from None
        except requests.exceptions.Timeout:
            raise ApiError(f"{self.url} did not answer within {self.timeout[1]:.0f}s") from None
        except requests.exceptions.RequestException as exc:
            raise ApiError(f"cannot reach {self.url}: {_short_reason(exc)}") from None
        if resp.status_code >= 400:
            raise error_from_response(resp)
        if not resp.content:
            return None
        try:
            return resp.json()
        except ValueError:
            raise ApiError(f"{url} did not answer with JSON (is {self.url} an Umbra server?)",
                           status=resp.status_code) from None

    def get(self, path: str, params: dict | None = None) -> Any:
        """``GET path``; see :meth:`request`."""
        return self.request("GET", path, params=params)

    def post(self, path: str, json: Any = None, params: dict | None = None) -> Any:
        """``POST path`` with a JSON body (and query ``params``); see :meth:`request`."""
        return self.request("POST", path, params=params, json=json if json is not None else {})
