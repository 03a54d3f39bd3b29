"""Headless Chromium logs in, opens a running run's dashboard and sees a metric
point arrive over the WebSocket without a reload; a finished run's page shows its model
download."""
import os
import shutil
import threading

import pytest
import requests

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
METRIC = "rollout/throughput_tok_s"


def _batch(seq, step, value):
    return {"seq": seq, "points": [{"name": METRIC, "step": step, "value": value}]}


def _open_run_page(pw, live_web, run):
    """Chromium logged in as alice on ``run``'s page: ``(browser, page)``."""
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"  # Playwright's sync API runs an event loop here
    browser = pw.chromium.launch(executable_path=CHROMIUM, args=[
        "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"])
    page = browser.new_page()
    page.goto(f"{live_web}/accounts/login/?next=/runs/{run.pk}/")
    page.fill("#id_username", "alice")
    page.fill("#id_password", "pw-alpha-123")
    page.click("#login")
    page.wait_for_url(f"**/runs/{run.pk}/")
    return browser, page


def test_new_point_arrives_without_reload(live_web, running_run):
    from playwright.sync_api import expect, sync_playwright

    run, token = running_run
    auth = {"Authorization": f"Bearer {token}"}
    assert requests.post(f"{live_web}/api/runs/{run.pk}/metrics/", json=_batch(1, 0, 100.0), headers=auth).status_code == 201

    with sync_playwright() as pw:
        browser, page = _open_run_page(pw, live_web, run)
        expect(page.locator("body")).to_have_attribute("data-ws", "open", timeout=20_000)
        counter = page.locator(f'.points[data-metric="{METRIC}"]')
        expect(counter).to_have_text("1")
        page.evaluate("window.__noReload = 42")

        resp = requests.post(f"{live_web}/api/runs/{run.pk}/metrics/", json=_batch(2, 1, 150.0), headers=auth)
        assert resp.status_code == 201
        expect(counter).to_have_text("2", timeout=10_000)
        assert page.evaluate("window.__noReload") == 42
        browser.close()


def test_the_model_download_shows_when_the_run_ends_and_on_a_finished_runs_page(live_web, running_run,
                                                                              checkpoint_root):
    """The page's state script shows only the actions a state allows; the download is not one
    of them (it once stayed hidden in every state), and it appears once a checkpoint exists."""
    from playwright.sync_api import expect, sync_playwright

    from runs.lifecycle import transition
    from runs.models import Run
    from umbra.job.checkpoint import CheckpointDir, LoopState

    run, _ = running_run
    with sync_playwright() as pw:
        browser, page = _open_run_page(pw, live_web, run)
        expect(page.locator("body")).to_have_attribute("data-ws", "open", timeout=20_000)
        page.wait_for_load_state("networkidle")
        expect(page.locator("#download-model")).to_be_hidden()  # no checkpoint yet
        root = CheckpointDir(checkpoint_root / f"run-{run.pk}")
        folder = root.begin(1)
        (folder / "hf").mkdir()
        (folder / "hf" / "config.json").write_text("{}")
        root.commit(folder, LoopState(1, 2, []))
        # pushed to the open page; from another thread: Playwright's event loop runs in this one
        pusher = threading.Thread(target=transition, args=(run.pk, Run.State.SUCCEEDED, "Ray job succeeded"))
        pusher.start()
        pusher.join()
        expect(page.locator("#run-state")).to_have_text("succeeded", timeout=10_000)
        expect(page.locator("#download-model")).to_be_visible(timeout=10_000)
        expect(page.locator("#cancel")).to_be_hidden()
        page.reload()  # a finished run's page: the script leaves it shown
        expect(page.locator("body")).to_have_attribute("data-ws", "open", timeout=20_000)
        page.wait_for_load_state("networkidle")
        page.wait_for_timeout(300)
        expect(page.locator("#download-model")).to_be_visible()
        browser.close()
