"""Headless Chromium on the team's runs table and a run page: sort by a column and filter
by state; fold a run-page section and find it folded after a reload. Screenshots of both
pages at 1400 and 800 px go to var/screenshots/ (runs-table-*.png, run-page-live-*.png,
run-page-starting-*.png, run-page-queued-*.png)."""
import os
import random
import re
from datetime import timedelta
from pathlib import Path

import pytest

from tests.browser.test_compare import _launch

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "var" / "screenshots"
METRICS = (("rollout/throughput_tok_s", 210.0), ("rollout/tail_time_s", 30.0), ("rollout/time_s", 120.0),
           ("rollout/request_latency_s/p90", 20.0), ("reward/mean", 0.3), ("reward/accuracy", 0.25),
           ("train/loss", 0.05), ("train/kl", 0.001), ("iteration/time_s", 200.0), ("sync/weight_time_s", 2.0))


def _trace_rows(rng):
    rows = []
    for g in range(8):
        for i in range(8):
            inst = (g + i) % 2
            start = rng.uniform(0, 5)
            finish = start + rng.uniform(5, 60)
            rows.append({"group": g, "index": i, "instance": inst, "start_s": start, "finish_s": finish,
                         "output_tokens": int(finish * 4), "finish_reason": "stop", "policy_version": 0,
                         "chunks": [[inst, start, finish, int(finish * 4)]]})
    return rows


@pytest.fixture
def runs_site(team_user):
    """Four runs of team Alpha: a running seer run with 6 of 12 iterations logged (and a trace),
    a finished verl and static-group run, a queued one; ``(seer run, verl run)``."""
    from django.utils import timezone

    from runs.models import Experiment, Run
    from telemetry.models import IterationTrace, MetricPoint
    from tests import factories
    from umbra.config import RunConfig

    team, alice = team_user
    bob = factories.member(team, "bob")
    exp = Experiment.objects.create(team=team, name="gsm8k", tags=["gsm8k"])
    t0 = timezone.now() - timedelta(hours=3)
    rng = random.Random(0)

    def make(policy, state, steps, scale, owner, minutes, **labels):
        config = RunConfig(model="tiny", rollout_policy=policy, iterations=12, max_tokens=64).model_dump()
        started = t0 + timedelta(minutes=minutes)
        run = Run.objects.create(experiment=exp, config=config, state=state, created_by=owner,
                                 started_at=None if state == "queued" else started,
                                 finished_at=started + timedelta(minutes=40) if state == "succeeded" else None,
                                 **labels)
        MetricPoint.objects.bulk_create([
            MetricPoint(run=run, name=name, step=s, value=base * (scale if "throughput" in name else 1 / scale)
                        * (1 + 0.1 * rng.random()) * (1 + s / 30))
            for s in range(steps) for name, base in METRICS])
        return run

    verl = make("verl", Run.State.SUCCEEDED, 12, 1.0, bob, 0, name="verl baseline", tags=["baseline"])
    make("static-group", Run.State.SUCCEEDED, 12, 0.97, bob, 50)
    seer = make("seer", Run.State.RUNNING, 6, 1.35, alice, 100, name="seer chunk 64", tags=["ab", "chunked"],
                note="divided rollout with the KV ledger")
    make("seer", Run.State.QUEUED, 0, 1.0, alice, 120)
    make("verl", Run.State.RUNNING, 0, 1.0, alice, 130, name="just started")
    # the System panel: two nodes (one near its memory limit) and two actors, per iteration
    MetricPoint.objects.bulk_create([
        MetricPoint(run=seer, name=name, step=s, value=value * (1 + s / 60))
        for s in range(6) for name, value in (
            ("system/node/head/mem_frac", 0.88), ("system/node/worker-1/mem_frac", 0.41),
            ("system/node/head/cpu_percent", 92.0), ("system/node/worker-1/cpu_percent", 55.0),
            ("system/actor/trainer-0/rss_gib", 5.1), ("system/actor/rollout-0/rss_gib", 2.8),
            ("system/actor/rollout-1/rss_gib", 2.7), ("system/driver_rss_gib", 0.6))])
    IterationTrace.objects.create(run=seer, iteration=5, requests=_trace_rows(rng))
    Run.objects.filter(pk=seer.pk).update(log_tail="\x1b[36m(pid=1)\x1b[0m vLLM engine started\nINFO iteration 5 done\n")
    return seer, verl


def _login(page, live_web, path):
    page.goto(f"{live_web}/accounts/login/?next={path}")
    page.fill("#id_username", "alice")
    page.fill("#id_password", "pw-alpha-123")
    page.click("#login")
    page.wait_for_url(f"**{path}")


def _shoot(page, name):
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for width in (1400, 800):
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_timeout(300)  # charts follow their container's width
        page.screenshot(path=str(SCREENSHOTS / f"{name}-{width}.png"), full_page=True)
    page.set_viewport_size({"width": 1400, "height": 900})


def _row_ids(page):
    return page.eval_on_selector_all("#runs-table tbody tr[data-run]", "rows => rows.map(r => Number(r.dataset.run))")


def test_sort_and_filter_the_runs_table(live_web, runs_site):
    from playwright.sync_api import expect, sync_playwright

    seer, verl = runs_site
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    with sync_playwright() as pw:
        browser = _launch(pw)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        _login(page, live_web, "/teams/alpha/runs/")
        assert page.title() == "Alpha runs · Umbra"
        expect(page.locator(f'tr[data-run="{seer.pk}"] [data-cell="throughput"]')).not_to_have_text("—")
        _shoot(page, "runs-table")

        page.click('th a[data-sort-key="throughput"]')  # ascending, then descending
        page.wait_for_url("**sort=throughput")
        ascending = _row_ids(page)
        page.click('th a[data-sort-key="throughput"]')
        page.wait_for_url("**sort=-throughput")
        assert _row_ids(page)[0] == seer.pk and _row_ids(page) != ascending
        expect(page.locator('th[aria-sort="descending"]')).to_have_text("Throughput tok/s")

        page.select_option('select[name="state"]', "succeeded")
        page.click("#run-filters button[type=submit]")
        page.wait_for_url("**state=succeeded**")
        ids = _row_ids(page)
        assert verl.pk in ids and seer.pk not in ids and len(ids) == 2
        page.fill('input[name="q"]', "baseline")
        page.click("#run-filters button[type=submit]")
        page.wait_for_url("**q=baseline**")
        assert _row_ids(page) == [verl.pk]

        page.goto(f"{live_web}/teams/alpha/runs/")
        expect(page.locator("#compare-button")).to_be_disabled()
        page.check(f'input[name="runs"][value="{seer.pk}"]')
        page.check(f'input[name="runs"][value="{verl.pk}"]')
        expect(page.locator("#compare-button")).to_be_enabled()
        page.click("#compare-button")
        page.wait_for_url("**/compare/**")
        assert f"runs={seer.pk}" in page.url and f"runs={verl.pk}" in page.url
        browser.close()


def test_a_folded_section_stays_folded_after_reload(live_web, runs_site):
    from playwright.sync_api import expect, sync_playwright

    seer, verl = runs_site
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    with sync_playwright() as pw:
        browser = _launch(pw)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        _login(page, live_web, f"/runs/{seer.pk}/")
        expect(page.locator('.points[data-metric="rollout/throughput_tok_s"]')).to_have_text("6")
        expect(page.locator("#instance-timeline")).to_be_visible()
        ratio = page.locator('.headline-item[data-key="throughput"] .ratio')  # seer medians vs verl's
        expect(ratio).to_have_text(re.compile(r"^1\.[23]\d×$"), timeout=10_000)
        expect(ratio).to_have_class("ratio good")
        expect(page.locator("#progress-text")).to_contain_text("6 of 12 iterations · ETA")
        sections = page.eval_on_selector_all("#dashboard .chart-group:not([hidden])", "s => s.map(x => x.dataset.section)")
        assert sections[:2] == ["Rollout speed", "Tail and latency"] and sections[-1] == "System"
        expect(page.locator("#job-log")).not_to_have_attribute("open", "")
        assert "\x1b" not in page.locator("#log-tail").text_content()
        expect(page.locator("#memory-warning")).to_contain_text("Near the memory limit: node head 9")
        system = page.locator('.chart-group[data-section="System"]')
        expect(system.locator('section.chart[data-metric="system/node/{node}/mem_frac"] canvas')).to_be_visible()
        expect(page.locator("#instance-timeline .no-trace-note")).to_have_count(0)  # drawn from the trace
        _shoot(page, "run-page-live")

        training = page.locator('.chart-group[data-section="Training"]')
        training.locator(".section-toggle").click()
        expect(training.locator(".chart-grid")).to_be_hidden()
        page.reload()
        training = page.locator('.chart-group[data-section="Training"]')
        expect(training.locator(".section-toggle")).to_have_attribute("aria-expanded", "false")
        expect(training.locator(".chart-grid")).to_be_hidden()
        expect(page.locator('.chart-group[data-section="Rollout speed"] .chart-grid')).to_be_visible()
        training.locator(".section-toggle").click()
        expect(training.locator(".chart-grid")).to_be_visible()

        from runs.models import Run

        for name, text, shot in (("just started", "Starting engines", "run-page-starting"),
                                 ("", "Waiting in the queue", "run-page-queued")):
            run = Run.objects.filter(name=name).first() if name else Run.objects.get(state="queued")
            page.goto(f"{live_web}/runs/{run.pk}/")
            expect(page.locator("#starting")).to_contain_text(text)
            expect(page.locator("#dashboard .chart-group:not([hidden])")).to_have_count(0)  # no wall of empty charts
            _shoot(page, shot)
        browser.close()
