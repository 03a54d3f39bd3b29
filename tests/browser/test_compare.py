"""Headless Chromium compares a run of the user's team with an org-visible run of
another team: both are overlaid, the smoothing slider goes into the URL, and that
URL restores the view in a new page; a run the user may not see shows the API's error."""
import os
import shutil

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
THROUGHPUT = "rollout/throughput_tok_s"
REWARD = "reward/mean"
POINTS = 50


@pytest.fixture
def two_runs(team_user):
    """Run A of team Alpha (static-group) and run B of team Beta (seer, experiment visible org-wide),
    each with POINTS throughput and reward points."""
    from runs.models import Experiment, Run
    from teams.models import Team
    from telemetry.models import MetricPoint

    alpha, user = team_user
    beta = Team.objects.create(name="Beta", slug="beta")
    exp_a = Experiment.objects.create(team=alpha, name="gsm8k-static")
    exp_b = Experiment.objects.create(team=beta, name="gsm8k-seer", visibility=Experiment.Visibility.ORG)
    a = Run.objects.create(experiment=exp_a, config={"model": "tiny", "rollout_policy": "static-group"},
                           state=Run.State.SUCCEEDED, created_by=user)
    b = Run.objects.create(experiment=exp_b, config={"model": "tiny", "rollout_policy": "seer"},
                           state=Run.State.SUCCEEDED)
    MetricPoint.objects.bulk_create([
        MetricPoint(run=run, name=name, step=step, value=value)
        for run, base in ((a, 200.0), (b, 260.0))
        for step in range(POINTS)
        for name, value in ((THROUGHPUT, base + 20 * (step % 5)), (REWARD, 0.1 + step / 100 + base / 1000))])
    return a, b


def _legend_labels(page, metric):
    """The run labels shown in a chart's legend (the x row and the hidden raw-series rows left out)."""
    return page.eval_on_selector_all(
        f'.compare-chart[data-metric="{metric}"] .u-legend .u-series',
        "rows => rows.slice(1).filter(r => r.offsetParent !== null).map(r => r.querySelector('.u-label').textContent)")


def _login(page, live_web, path):
    page.goto(f"{live_web}/accounts/login/?next={path}")
    page.fill("#id_username", "alice")
    page.fill("#id_password", "pw-alpha-123")
    page.click("#login")
    page.wait_for_url("**/compare/**")


def _launch(pw):
    return pw.chromium.launch(executable_path=CHROMIUM, args=[
        "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"])


def _drawn(page):
    from playwright.sync_api import expect

    expect(page.locator("body")).to_have_attribute("data-compare-drawn", str(4 * POINTS), timeout=20_000)


def test_two_runs_overlaid_and_smoothing_kept_in_url(live_web, two_runs):
    from playwright.sync_api import expect, sync_playwright

    a, b = two_runs
    label_a = f"#{a.pk} Alpha/gsm8k-static static-group"
    label_b = f"#{b.pk} Beta/gsm8k-seer seer"
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"  # Playwright's sync API runs an event loop here
    with sync_playwright() as pw:
        browser = _launch(pw)
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        errors = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        _login(page, live_web, f"/compare/?runs={a.pk},{b.pk}")

        # Both runs overlaid in one chart per metric (default metrics: two of them have points here).
        _drawn(page)
        for metric in (THROUGHPUT, REWARD):
            chart = page.locator(f'.compare-chart[data-metric="{metric}"]')
            expect(chart).to_have_attribute("data-points", str(2 * POINTS))
            assert _legend_labels(page, metric) == [label_a, label_b]
        assert page.evaluate("typeof window.__compareDrawMs") == "number"
        expect(page.locator("#summary tbody tr")).to_have_count(2)
        expect(page.locator("#summary tr.reference")).to_have_attribute("data-run-id", str(a.pk))
        expect(page.locator(f'#summary tr[data-run-id="{b.pk}"] td[data-col="throughput_tok_s"]')).to_contain_text("×)")
        expect(page.locator('#config-diff tbody tr[data-key="rollout_policy"]')).to_have_count(1)
        expect(page.locator("#compare-error")).to_be_hidden()

        # Smoothing redraws in place and lands in the URL.
        page.eval_on_selector("#smooth", "el => { el.value = '0.6'; el.dispatchEvent(new Event('input', {bubbles: true})); }")
        page.wait_for_function("new URLSearchParams(location.search).get('smooth') === '0.6'")
        expect(page.locator("#smooth-value")).to_have_text("0.60")
        assert f"runs={a.pk},{b.pk}" in page.url
        url = page.url

        # The copied URL reproduces the view.
        again = context.new_page()
        again.on("pageerror", lambda exc: errors.append(str(exc)))
        again.goto(url)
        _drawn(again)
        assert again.input_value("#smooth") == "0.6"
        expect(again.locator("#smooth-value")).to_have_text("0.60")
        for metric in (THROUGHPUT, REWARD):
            expect(again.locator(f'.compare-chart[data-metric="{metric}"]')).to_have_attribute("data-points", str(2 * POINTS))
            assert _legend_labels(again, metric) == [label_a, label_b]
        assert errors == []
        browser.close()


def test_hidden_run_shows_the_api_error(live_web, two_runs):
    """A run of another team's team-only experiment answers 404: the page shows the
    API's message instead of charts, and raises nothing."""
    from playwright.sync_api import expect, sync_playwright
    from runs.models import Experiment, Run
    from teams.models import Team

    a, _ = two_runs
    gamma = Team.objects.create(name="Gamma", slug="gamma")
    hidden = Run.objects.create(experiment=Experiment.objects.create(team=gamma, name="private"),
                                config={"model": "tiny", "rollout_policy": "seer"})
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    with sync_playwright() as pw:
        browser = _launch(pw)
        page = browser.new_page()
        errors = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        _login(page, live_web, f"/compare/?runs={a.pk},{hidden.pk}")
        expect(page.locator("body")).to_have_attribute("data-compare-state", "error", timeout=20_000)
        expect(page.locator("#compare-error")).to_be_visible()
        expect(page.locator("#compare-error")).not_to_be_empty()
        expect(page.locator(".compare-chart")).to_have_count(0)
        assert errors == []
        browser.close()
