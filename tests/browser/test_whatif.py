"""Headless Chromium shows a finished what-if simulation: the per-policy table, both bar
charts, one latency-CDF overlay of every policy, and each policy's instance timeline as a
band whose per-instance lines show on demand, with no page error."""
import os

import pytest

from tests.browser.test_compare import _launch

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
POLICIES = ["static-group", "seer-no-spec", "seer", "oracle-lfs"]


def test_result_page_draws_every_policy(live_web, team_user):
    from playwright.sync_api import expect, sync_playwright

    from whatif.models import Simulation
    from whatif.simulator import simulate

    team, user = team_user
    trace = [{"policy": "static-group", "group": g, "index": i, "prompt_tokens": 30, "output_tokens": 10 + 30 * g + 5 * i,
              "max_tokens": 200, "instances": 2, "capacity": 3, "kv_cache_gib": 0} for g in range(5) for i in range(4)]
    params = {"workload": "upload", "label": "upload t.jsonl", "group_size": 8, "instances": None, "kv_tokens": None,
              "max_batch": None, "policies": POLICIES, "accept_len": 2.0, "shared_kv": False, "trace_policy": None}
    sim = Simulation.objects.create(team=team, created_by=user, label="upload t.jsonl", params=params, trace=trace,
                                    state="done", results=simulate(params, trace))
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    with sync_playwright() as pw:
        browser = _launch(pw)
        page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
        errors = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(f"{live_web}/accounts/login/?next=/whatif/{sim.pk}/")
        page.fill("#id_username", "alice")
        page.fill("#id_password", "pw-alpha-123")
        page.click("#login")
        page.wait_for_url(f"**/whatif/{sim.pk}/")
        expect(page.locator("#whatif")).to_have_attribute("data-ready", "1", timeout=20_000)
        expect(page.locator("#whatif-summary tr[data-policy]")).to_have_count(len(POLICIES))
        expect(page.locator("section.bars canvas")).to_have_count(2)
        expect(page.locator("#cdf-overlay canvas")).to_have_count(1)
        expect(page.locator("#cdf-overlay")).to_have_attribute("data-policies", str(len(POLICIES)))
        assert page.locator("#cdf-overlay .compact-legend .key").all_inner_texts() == POLICIES
        for name in POLICIES:
            expect(page.locator(f"#timeline-{name} canvas")).to_have_count(1)
            expect(page.locator(f"#timeline-{name}")).to_have_attribute("data-instances", "2")
        assert page.locator(".u-legend:visible").count() == 0  # one compact line per chart instead
        timeline = page.locator("#timeline-seer")
        timeline.locator(".instance-toggle input").check()
        expect(timeline).to_have_attribute("data-instance-lines", "shown")
        width = page.evaluate("document.querySelector('#cdf-overlay').getBoundingClientRect().width")
        assert width > 0.9 * page.evaluate("document.querySelector('#whatif').getBoundingClientRect().width")
        row = page.locator('#whatif-summary tr[data-policy="static-group"]')
        assert row.locator("th").inner_text() == "static-group"  # the row's header, then its numbers
        assert row.locator("td").nth(5).inner_text() != ""  # preemptions
        headers = page.locator("#whatif-summary thead th").all_inner_texts()
        assert "Throughput vs static-group" in headers and not any("verl" in h for h in headers)  # verl did not run
        expect(page.locator("#sim-state")).to_have_class("badge state-done")
        values = page.locator("section.bars").first.get_attribute("data-values").split(" ")
        assert len(values) == len(POLICIES) and all(v.endswith("×") for v in values)  # every bar has its value
        assert errors == []
        browser.close()
