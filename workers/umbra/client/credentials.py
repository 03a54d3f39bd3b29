"""Where the client keeps the platform URL and API token.

``$UMBRA_CONFIG_DIR/credentials.json`` (default ``~/.config/umbra``) holds
``{"url": "...", "token": "..."}`` with file mode 0600. The environment variables
``UMBRA_URL`` and ``UMBRA_TOKEN`` override the file's values one by one.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from umbra.client.errors import CliError

FILE_NAME = "credentials.json"


@dataclass(frozen=True)
class Credentials:
    """A platform base URL (no trailing slash) and its API token (may be empty)."""

    url: str
    token: str


def normalize_url(url: str) -> str:
    """``url`` without surrounding blanks, trailing slashes or a trailing ``/api``;
    ``http://`` is added when no scheme is given."""
    url = url.strip().rstrip("/")
    if url.endswith("/api"):
        url = url[: -len("/api")]
    if url and "://" not in url:
        url = f"http://{url}"
    return url


def config_dir() -> Path:
    """The client's configuration folder: ``$UMBRA_CONFIG_DIR`` or ``~/.config/umbra``."""
    env = os.environ.get("UMBRA_CONFIG_DIR")
    return Path(env).expanduser() if env else Path.home() / ".config" / "umbra"


def credentials_path() -> Path:
    """Path of the credentials file (it may not exist)."""
    return config_dir() / FILE_NAME


def read_file() -> dict:
    """The stored ``{"url", "token"}`` or ``{}`` when there is no file.

    Raises:
        CliError: the file exists but cannot be read or is not a JSON object.
    """
    path = credentials_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise CliError(f"cannot read {path} ({exc}); run `umbra login` again") from None
    if not isinstance(data, dict):
        raise CliError(f"{path} is not a JSON object; run `umbra login` again")
    return data


def save(url: str, token: str) -> Path:
    """Store ``url`` and ``token``, replacing the file atomically; it is created with
    mode 0600 (readable by the owner only) and its folder with 0700. Returns its path.

    Raises:
        CliError: the folder or file cannot be written.
    """
    path = credentials_path()
    tmp = path.with_name(f".{FILE_NAME}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            os.fchmod(fh.fileno(), 0o600)  # O_CREAT's mode is masked by the umask; this is not
            json.dump({"url": normalize_url(url), "token": token}, fh)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise CliError(f"cannot write {path}: {exc}") from None
    return path


def forget(url: str | None = None) -> tuple[str, str] | None:
    """Forget the stored token (of ``url`` when given: only if it is the stored one). The
    URL stays, as ``umbra login``'s default. Returns the ``(url, token)`` forgotten, or None
    when no token was stored for it. A file that cannot be read is removed.

    Raises:
        CliError: the file cannot be written or removed.
    """
    path = credentials_path()
    try:
        stored = read_file()
    except CliError:
        try:
            path.unlink(missing_ok=True)
        except OSError as exc:
            raise CliError(f"cannot remove {path}: {exc}") from None
        return None
    stored_url, token = normalize_url(str(stored.get("url") or "")), str(stored.get("token") or "")
    if not token or (url and normalize_url(url) != stored_url):
        return None
    save(stored_url, "")
    return stored_url, token


def load(require_token: bool = True) -> Credentials:
    """The credentials to use: the file's, each value overridden by ``UMBRA_URL`` /
    ``UMBRA_TOKEN`` when set. The stored token is used only with the stored URL.

    Raises:
        CliError: no URL (or, with ``require_token``, no token) is known: the
            message tells the user to run ``umbra login``.
    """
    env_url = normalize_url(os.environ.get("UMBRA_URL", ""))
    env_token = os.environ.get("UMBRA_TOKEN", "").strip()
    stored = {} if env_url and env_token else read_file()
    stored_url = normalize_url(str(stored.get("url") or ""))
    url = env_url or stored_url
    # the stored token belongs to the stored URL: never send it to another server
    token = env_token or (str(stored.get("token") or "") if url == stored_url else "")
    if not url or (require_token and not token):
        raise CliError("not logged in: run `umbra login` (or set UMBRA_URL and UMBRA_TOKEN)")
    return Credentials(url=url, token=token)
