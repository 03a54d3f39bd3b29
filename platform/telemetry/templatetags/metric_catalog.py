"""``{% metric_catalog %}``: the metric catalogue as a JSON script element for the browser.

The dashboard and compare pages read chart titles, units, sections, order and which way is
better from it (``frontend/src/catalog.ts``) instead of naming metrics themselves. It is
``umbra.telemetry.catalog.document()`` plus the comparison's summary columns
(``umbra.telemetry.summary_columns``) under ``"summary"``.
"""
from __future__ import annotations

from django import template
from django.utils.html import json_script

from umbra.telemetry import catalog
from umbra.telemetry.summary_columns import SUMMARY_COLUMNS

register = template.Library()

ELEMENT_ID = "metric-catalog"


@register.simple_tag
def metric_catalog() -> str:
    """``<script id="metric-catalog" type="application/json">{...}</script>`` (escaped by json_script)."""
    return json_script({**catalog.document(), "summary": [c.as_dict() for c in SUMMARY_COLUMNS]}, ELEMENT_ID)
