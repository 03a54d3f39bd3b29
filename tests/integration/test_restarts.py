"""Fault tests: the web server, then Redis, restarts during a run.

The job's real TelemetryClient posts batches to a daphne of this test's own (the
session's ``live_web`` must not be killed); a headless Chromium has the run's
dashboard open throughout. Asserted: the page reconnects by itself (no reload),
back-fills, and shows every step once; the database holds every point once; the
client's pending batches drain.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time

import pytest
import requests

from tests.conftest import VENV_BIN, _env, _stop, _test_database_url, free_port, free_ports, wait_http

pytestmark = [pytest.mark.integration, pytest.mark.browser, pytest.mark.django_db(transaction=True)]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
METRICS = ("rollout/throughput_tok_s", "reward/mean")
# The job's client with its default retries sleeps 0.5+1+2+4+8 s before giving up on a batch.
SEND_DOWN_MAX_S = 30.0
# Ingestion must not wait long on a refused Redis connection (its push is dropped, not retried).
BROADCAST_DOWN_MAX_S = 5.0


def _daphne(port: int, log, **env) -> subprocess.Popen:
    """Our own daphne on ``port`` over the test database (same command as ``live_web``)."""
    return subprocess.Popen([str(VENV_BIN / "daphne"), "-b", "127.0.0.1", "-p", str(port),
                             "umbra_site.asgi:application"],
                            env=_env(DATABASE_URL=_test_database_url(), **env),
                            stdout=log, stderr=subprocess.STDOUT)


def _redis(port: int, log) -> subprocess.Popen:
    """A throw-away redis-server (no persistence: a restart loses every key, as a crash would)."""
    proc = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no"], stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 20
    ping = ["redis-cli", "-p", str(port), "ping"]
    while subprocess.run(ping, capture_output=True, text=True).stdout.strip() != "PONG":
        assert proc.poll() is None and time.time() < deadline, "redis-server did not start"
        time.sleep(0.2)
    return proc


def _kill(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)


def _points(step: int) -> dict[str, float]:
    return {METRICS[0]: 100.0 + step, METRICS[1]: step / 10}


def _open_dashboard(pw, url: str, run):
    """Chromium logged in as alice on the run's dashboard, socket open; returns (browser, page, series GETs)."""
    from playwright.sync_api import expect

    browser = pw.chromium.launch(executable_path=CHROMIUM, args=[
        "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"])
    page = browser.new_page()
    series_gets: list[float] = []  # monotonic times of the page's back-fill GETs
    page.on("request", lambda r: series_gets.append(time.monotonic())
            if r.url.split("?")[0].endswith("/series.json") else None)
    page.goto(f"{url}/accounts/login/?next=/runs/{run.pk}/")
    page.fill("#id_username", "alice")
    page.fill("#id_password", "pw-alpha-123")
    page.click("#login")
    page.wait_for_url(f"**/runs/{run.pk}/")
    expect(page.locator("body")).to_have_attribute("data-ws", "open", timeout=20_000)
    page.evaluate("window.__noReload = 42")
    return browser, page, series_gets


def _expect_counts(page, n: int, timeout_ms: int = 20_000) -> None:
    from playwright.sync_api import expect

    for name in METRICS:
        expect(page.locator(f'.points[data-metric="{name}"]')).to_have_text(str(n), timeout=timeout_ms)


def _assert_stored_once(run, steps: int, batches: int) -> None:
    from telemetry.models import MetricBatch, MetricPoint

    assert sorted(MetricBatch.objects.filter(run=run).values_list("seq", flat=True)) == list(range(1, batches + 1))
    for name in METRICS:
        rows = list(MetricPoint.objects.filter(run=run, name=name).order_by("step").values_list("step", "value"))
        assert rows == [(s, _points(s)[name]) for s in range(steps)], name


def _timed_send(client, step: int) -> tuple[bool, float]:
    t0 = time.monotonic()
    ok = client.send(step, _points(step))
    return ok, time.monotonic() - t0


def test_web_server_restart(running_run, tmp_path):
    """daphne is SIGKILLed mid-run and restarted on the same port."""
    from playwright.sync_api import expect, sync_playwright
    from umbra.telemetry.client import TelemetryClient

    run, token = running_run
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {"UMBRA_CHANNEL_PREFIX": f"umbra-test-restart-{port}"}
    log = open(tmp_path / "web.log", "w")
    web = _daphne(port, log, **env)
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"  # Playwright's sync API runs an event loop here
    try:
        wait_http(f"{url}/accounts/login/", 60, web)
        client = TelemetryClient(url, str(run.pk), token)  # the job's defaults (timeout, retries)
        assert client.send(0, _points(0))
        with sync_playwright() as pw:
            browser, page, series_gets = _open_dashboard(pw, url, run)
            _expect_counts(page, 1)
            assert client.send(1, _points(1))
            _expect_counts(page, 2, 10_000)  # live push

            _kill(web)
            expect(page.locator("body")).to_have_attribute("data-ws", "closed", timeout=10_000)
            # Buffered, not lost, and the send gives up in bounded time (the job's defaults:
            # its retries sleep 15.5 s); the next batch queues behind it, in order. That one
            # tries once: the bound was just measured, and waiting it out again proves nothing more.
            for step, retries in ((2, client.retries), (3, 1)):
                client.retries, defaults = retries, client.retries
                ok, took = _timed_send(client, step)
                client.retries = defaults
                print(f"send of step {step} with the web server down: {ok} after {took:.1f} s ({retries} attempts)")
                assert not ok and took < SEND_DOWN_MAX_S
                assert [b["seq"] for b in client.pending] == list(range(3, step + 2))

            web = _daphne(port, log, **env)
            wait_http(f"{url}/accounts/login/", 60, web)
            restarted = time.monotonic()
            assert client.flush() and client.pending == []  # batches 3 and 4 go in order
            expect(page.locator("body")).to_have_attribute("data-ws", "open", timeout=30_000)
            print(f"page reconnected; back-fill GET {max(series_gets) - restarted:.1f} s after the restart")
            assert max(series_gets) > restarted, "no back-fill GET after the socket reopened"
            _expect_counts(page, 4)
            assert client.send(4, _points(4)) and client.pending == []
            _expect_counts(page, 5, 10_000)
            assert page.evaluate("window.__noReload") == 42, "the page was reloaded"
            browser.close()
        _assert_stored_once(run, steps=5, batches=5)
    finally:
        _stop(web)
        log.close()


def test_redis_restart(running_run, tmp_path):
    """The web server's Redis (channel layer and cache) is SIGKILLed mid-run and restarted
    empty on the same port."""
    from playwright.sync_api import expect, sync_playwright
    from umbra.telemetry.client import TelemetryClient

    run, token = running_run
    redis_port, port = free_ports(2)
    url = f"http://127.0.0.1:{port}"
    env = {"REDIS_URL": f"redis://127.0.0.1:{redis_port}/0", "UMBRA_CHANNEL_PREFIX": f"umbra-test-redis-{port}"}
    redis_log, web_log = open(tmp_path / "redis.log", "w"), open(tmp_path / "web.log", "w")
    redis = _redis(redis_port, redis_log)
    web = _daphne(port, web_log, **env)
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        wait_http(f"{url}/accounts/login/", 60, web)
        client = TelemetryClient(url, str(run.pk), token)
        assert client.send(0, _points(0))
        with sync_playwright() as pw:
            browser, page, series_gets = _open_dashboard(pw, url, run)
            _expect_counts(page, 1)
            assert client.send(1, _points(1))
            _expect_counts(page, 2, 10_000)

            _kill(redis)
            for step in (2, 3):
                ok, took = _timed_send(client, step)
                print(f"send of step {step} with Redis down: {ok} after {took:.1f} s, "
                      f"{len(client.pending)} pending; page socket {page.evaluate('document.body.dataset.ws')}")
                # Stored in PostgreSQL with only the push lost, or buffered; either way no long block.
                assert took < BROADCAST_DOWN_MAX_S
            # The dashboard's back-fill GET must not fail while Redis is down (its cache is Redis).
            cookies = {c["name"]: c["value"] for c in page.context.cookies()}
            t0 = time.monotonic()
            resp = requests.get(f"{url}/runs/{run.pk}/series.json", cookies=cookies, timeout=30)
            print(f"series GET with Redis down: {resp.status_code} after {time.monotonic() - t0:.1f} s")
            assert resp.status_code == 200

            redis = _redis(redis_port, redis_log)
            restarted = time.monotonic()
            assert client.flush() and client.pending == []
            _expect_counts(page, 4, 30_000)  # steps 2 and 3 reach the page by back-fill
            expect(page.locator("body")).to_have_attribute("data-ws", "open")
            assert max(series_gets) > restarted, "no back-fill GET after Redis came back"
            # The socket must be subscribed again: a new point arrives live.
            assert client.send(4, _points(4)) and client.pending == []
            _expect_counts(page, 5, 10_000)
            assert page.evaluate("window.__noReload") == 42, "the page was reloaded"
            browser.close()
        _assert_stored_once(run, steps=5, batches=5)
    finally:
        _stop(web)
        _stop(redis)
        web_log.close()
        redis_log.close()
