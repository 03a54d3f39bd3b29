"""Headless Chromium logs in, opens a running run's dashboard and sees a metric
point arrive over the WebSocket without a reload."""
import os
import shutil

import pytest
import requests

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
METRIC = "rollout/throughput_tok_s"


def _batch(seq, step, value):
    return {"seq": seq, "points": [{"name": METRIC, "step": step, "value": value}]}


def test_new_point_arrives_without_reload(live_web, running_run):
    from playwright.sync_api import expect, sync_playwright

    run, token = running_run
    auth = {"Authorization": f"Bearer {token}"}
    assert requests.post(f"{live_web}/api/runs/{run.pk}/metrics/", json=_batch(1, 0, 100.0), headers=auth).status_code == 201

    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"  # Playwright's sync API runs an event loop here
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--no-first-run"])
        page = browser.new_page()
        page.goto(f"{live_web}/accounts/login/?next=/runs/{run.pk}/")
        page.fill("#id_username", "alice")
        page.fill("#id_password", "pw-alpha-123")
        page.click("#login")
        page.wait_for_url(f"**/runs/{run.pk}/")
        expect(page.locator("body")).to_have_attribute("data-ws", "open", timeout=20_000)
        counter = page.locator(f'.points[data-metric="{METRIC}"]')
        expect(counter).to_have_text("1")
        page.evaluate("window.__noReload = 42")

        resp = requests.post(f"{live_web}/api/runs/{run.pk}/metrics/", json=_batch(2, 1, 150.0), headers=auth)
        assert resp.status_code == 201
        expect(counter).to_have_text("2", timeout=10_000)
        assert page.evaluate("window.__noReload") == 42
        browser.close()
