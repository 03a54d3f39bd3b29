"""The dashboard and compare pages embed the metric catalogue their charts are drawn from."""
import json
import re

import pytest

from umbra.telemetry import catalog

pytestmark = pytest.mark.django_db


def _embedded(html: str) -> dict:
    found = re.search(r'<script id="metric-catalog" type="application/json">(.*?)</script>', html, re.S)
    assert found, "the page embeds no metric catalogue"
    return json.loads(found.group(1))


@pytest.mark.parametrize("page", ["/runs/{run}/", "/compare/?runs={run}"])
def test_page_embeds_the_catalogue(client, running_run, page):
    run, _ = running_run
    client.force_login(run.created_by)
    resp = client.get(page.format(run=run.pk))
    assert resp.status_code == 200
    doc = _embedded(resp.content.decode())
    assert [m["name"] for m in doc["metrics"]] == [m.name for m in catalog.METRICS]
    assert {c["key"] for c in doc["summary"]} >= {"throughput_tok_s", "iterations"}
