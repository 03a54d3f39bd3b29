"""Errors the client reports to the user as one ``umbra: message`` line, and the
flattening of the API's nested field errors into ``(field, message)`` pairs."""
from __future__ import annotations

# Exit codes of the console script.
EXIT_SERVER = 1  # the server refused, failed or could not be reached
EXIT_USAGE = 2  # the user's input is wrong


class CliError(Exception):
    """An error to print as ``umbra: <message>`` and exit with ``exit_code``.

    ``fields`` optionally holds ``(field, message)`` pairs printed one per line
    instead of the message (invalid input).
    """

    def __init__(self, message: str, exit_code: int = EXIT_SERVER,
                 fields: list[tuple[str, str]] | None = None):
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
        self.fields = fields or []

    def with_prefix(self, prefix: str) -> "CliError":
        """Prepend ``prefix: `` to the message and to each field line (e.g. ``run 7``);
        returns self."""
        self.message = f"{prefix}: {self.message}"
        self.args = (self.message,)
        self.fields = [(f"{prefix}: {f}" if f else prefix, m) for f, m in self.fields]
        return self

    def lines(self) -> list[str]:
        """The ``umbra: ...`` lines to print on stderr: one per field error, else one."""
        if self.fields:
            shown = [f"umbra: {f}: {m}" if f else f"umbra: {m}" for f, m in self.fields[:MAX_FIELD_LINES]]
            if len(self.fields) > MAX_FIELD_LINES:
                shown.append(f"umbra: ... and {len(self.fields) - MAX_FIELD_LINES} more errors")
            return shown
        return [f"umbra: {' '.join(self.message.split())}"]


MAX_FIELD_LINES = 50


class UsageError(CliError):
    """Bad input from the user (arguments, files, config): exit code 2."""

    def __init__(self, message: str, fields: list[tuple[str, str]] | None = None):
        super().__init__(message, EXIT_USAGE, fields)


def flatten_field_errors(payload, prefix: str = "") -> list[tuple[str, str]]:
    """Flatten DRF-style field errors into ``(dotted.field, message)`` pairs, in order.

    ``{"config": {"group_size": ["too small"]}, "team": ["required"]}`` →
    ``[("config.group_size", "too small"), ("team", "required")]``. A bare string or
    list of strings at the top gives pairs with an empty field name.
    """
    if isinstance(payload, dict):
        out: list[tuple[str, str]] = []
        for key, value in payload.items():
            out.extend(flatten_field_errors(value, f"{prefix}.{key}" if prefix else str(key)))
        return out
    if isinstance(payload, list):
        out = []
        for i, item in enumerate(payload):
            # a list of dicts is a list of nested objects: index them
            sub = f"{prefix}[{i}]" if isinstance(item, dict) else prefix
            out.extend(flatten_field_errors(item, sub))
        return out
    return [(prefix, str(payload))]
