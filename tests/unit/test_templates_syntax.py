"""Django's ``{# #}`` comments end at the line's end: a ``{#`` whose ``#}`` is on a later
line is not a comment but text on the page (seen on the run page's header)."""
import re
from pathlib import Path

TEMPLATES = Path(__file__).resolve().parents[2] / "platform" / "templates"


def test_no_template_comment_spans_lines():
    bad = [f"{path.relative_to(TEMPLATES)}:{n}" for path in sorted(TEMPLATES.rglob("*.html"))
           for n, line in enumerate(path.read_text().splitlines(), 1)
           if re.search(r"\{#(?!.*#\})", line)]
    assert bad == [], f"multi-line {{# #}} comments (use {{% comment %}}): {bad}"
