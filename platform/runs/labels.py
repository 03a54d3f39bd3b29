"""A run's labels (ours): its name, its own tags and a note, set by the team from the
runs table, the run page, ``PATCH /api/runs/ID/`` and ``umbra label``.

``clean_labels`` checks a change (ValueError with a message a form or a 400 shows) and
``update_labels`` stores it; tags are short words, kept once each, in the order given.
"""
from __future__ import annotations

import re

from django.core.exceptions import ValidationError

from runs.models import Run
from runs.validators import printable_name

LABEL_FIELDS = ("name", "tags", "note")
MAX_NAME = 200
MAX_NOTE = 5000
MAX_TAGS = 20
MAX_TAG = 50
TAG_PATTERN = r"^[A-Za-z0-9_.:+-]+$"  # also the API schema's pattern
_TAG = re.compile(TAG_PATTERN[1:-1])


def parse_tags(text: str) -> list[str]:
    """Tags from a comma- or space-separated string (the form's input): ``"a, b c"`` -> ``[a, b, c]``."""
    return [t for t in re.split(r"[\s,]+", text.strip()) if t]


def clean_labels(changes: dict) -> dict:
    """``changes`` checked and normalised (name and note stripped, tags de-duplicated).

    Raises ValueError naming the field for an unknown field, a value of the wrong type or size,
    a name with control characters (terminal escapes, newlines) or a tag that is not a short
    word (letters, digits, ``_ . : + -``).
    """
    unknown = sorted(set(changes) - set(LABEL_FIELDS))
    if unknown:
        raise ValueError(f"{', '.join(unknown)}: not a run label (name, tags, note)")
    out: dict = {}
    for field in ("name", "note"):
        if field in changes:
            value = changes[field]
            if not isinstance(value, str):
                raise ValueError(f"{field}: must be a string")
            value = value.strip()
            limit = MAX_NAME if field == "name" else MAX_NOTE
            if len(value) > limit:
                raise ValueError(f"{field}: at most {limit} characters")
            if "\x00" in value:  # PostgreSQL text cannot hold it (the API's serializer refuses it too)
                raise ValueError(f"{field}: must not contain NUL characters")
            if field == "name":  # shown in tables and terminals: no escapes (a note keeps its newlines)
                try:
                    printable_name(value)
                except ValidationError as exc:
                    raise ValueError(f"name: {exc.messages[0]}") from None
            out[field] = value
    if "tags" in changes:
        tags = changes["tags"]
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            raise ValueError("tags: must be a list of strings")
        tags = list(dict.fromkeys(t.strip() for t in tags if t.strip()))
        if len(tags) > MAX_TAGS:
            raise ValueError(f"tags: at most {MAX_TAGS}")
        bad = [t for t in tags if len(t) > MAX_TAG or not _TAG.fullmatch(t)]
        if bad:
            raise ValueError(f"tags: {bad[0]!r} is not a tag (a word of at most {MAX_TAG} ASCII letters, digits or _.:+-)")
        out["tags"] = tags
    return out


def update_labels(run: Run, changes: dict) -> Run:
    """Store ``changes`` (see ``clean_labels``, which raises ValueError) on ``run``."""
    clean = clean_labels(changes)
    for field, value in clean.items():
        setattr(run, field, value)
    if clean:
        run.save(update_fields=list(clean))
    return run
