"""Validators for user-chosen names shown to other users (pages, CLI, exports)."""
from __future__ import annotations

import unicodedata

from django.core.exceptions import ValidationError


def printable_name(value: str) -> None:
    """Reject control characters (terminal escapes, NUL, newlines) in a name.

    Raises django.core.exceptions.ValidationError.
    """
    if any(unicodedata.category(c) in ("Cc", "Cf") for c in str(value)):
        raise ValidationError("must not contain control characters")
