"""Headless Chromium compares a run of the user's team with an org-visible run of
another team: both are overlaid, the smoothing slider goes into the URL, and that
URL restores the view in a new page; a run the user may not see shows the API's error.
Legends show values on hover only (the page's key names the runs once), a metric no run
logged gets no chart, and empty summary columns are left out."""
import os
import shutil
from pathlib import Path

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
THROUGHPUT = "rollout/throughput_tok_s"
REWARD = "reward/mean"
POINTS = 50
SCREENSHOTS = Path(__file__).resolve().parents[2] / "var" / "screenshots"


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
    """The run labels shown in a chart's legend while its plot is hovered (the x row and the
    hidden raw-series rows left out); no legend is shown before or after the hover."""
    from playwright.sync_api import expect

    chart = page.locator(f'.compare-chart[data-metric="{metric}"]')
    expect(chart.locator(".u-legend")).to_be_hidden()
    chart.locator(".u-over").hover()
    expect(chart.locator(".u-legend")).to_be_visible()
    labels = page.eval_on_selector_all(
        f'.compare-chart[data-metric="{metric}"] .u-legend .u-series',
        "rows => rows.slice(1).filter(r => r.offsetParent !== null).map(r => r.querySelector('.u-label').textContent)")
    page.mouse.move(0, 0)
    expect(chart.locator(".u-legend")).to_be_hidden()
    return labels


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
        # One colour key for the page; no chart for a default metric neither run logged.
        assert page.locator("#run-key .run-key-label").all_text_contents() == [label_a, label_b]
        expect(page.locator('.compare-chart[data-metric="rollout/spec/accept_len"]')).to_have_count(0)
        expect(page.locator("#left-out")).to_contain_text("accept len")
        # A lone chart of its section spans the row: as wide as the section.
        widths = page.evaluate("""() => { const c = document.querySelector('.compare-chart[data-metric="reward/mean"]');
            return [c.getBoundingClientRect().width, c.closest('.chart-grid').getBoundingClientRect().width]; }""")
        assert widths[0] >= widths[1] - 1, widths
        # The key hides a run in every chart and shows it again.
        page.click(f'#run-key button[data-run-id="{b.pk}"]')
        expect(page.locator(f'#run-key button[data-run-id="{b.pk}"]')).to_have_attribute("aria-pressed", "false")
        assert _legend_labels(page, THROUGHPUT) == [label_a]
        page.click(f'#run-key button[data-run-id="{b.pk}"]')
        # What a hover shows (looked at before a UI change is called done).
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.locator(f'.compare-chart[data-metric="{THROUGHPUT}"] .u-over').hover(position={"x": 120, "y": 60})
        page.locator(f'.compare-chart[data-metric="{THROUGHPUT}"]').screenshot(path=str(SCREENSHOTS / "compare-hover.png"))
        page.mouse.move(0, 0)
        expect(page.locator("#summary tbody tr")).to_have_count(2)
        # Columns no run has are left out; a count (iterations) gets no ratio.
        expect(page.locator('#summary th[data-col="accept_len"]')).to_have_count(0)
        expect(page.locator('#summary th[data-col="accuracy"]')).to_have_count(0)
        expect(page.locator('#summary th[data-col="iterations"]')).to_have_count(0)  # no iteration/time_s here
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


def test_summary_labels_accuracy_and_fits_a_narrow_window(live_web, two_runs):
    """Accuracy reads validation accuracy where a run has it ("val") and training accuracy
    otherwise ("train"), with no ratio between the two; iterations get no ratio; at 800 px the
    page does not scroll sideways (the summary scrolls in its card) and "State" stays with its select."""
    from playwright.sync_api import expect, sync_playwright
    from telemetry.models import MetricPoint

    a, b = two_runs
    MetricPoint.objects.bulk_create(
        [MetricPoint(run=run, name="iteration/time_s", step=s, value=5.0) for run in (a, b) for s in range(POINTS)]
        + [MetricPoint(run=a, name="val/accuracy", step=s, value=0.5 + s / 1000) for s in range(0, POINTS, 10)]
        + [MetricPoint(run=run, name="reward/accuracy", step=s, value=0.3) for run in (a, b) for s in range(POINTS)])
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    with sync_playwright() as pw:
        browser = _launch(pw)
        page = browser.new_page(viewport={"width": 800, "height": 900})
        errors = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        _login(page, live_web, f"/compare/?runs={a.pk},{b.pk}")
        _drawn(page)
        acc_a = page.locator(f'#summary tr[data-run-id="{a.pk}"] td[data-col="accuracy"]')
        acc_b = page.locator(f'#summary tr[data-run-id="{b.pk}"] td[data-col="accuracy"]')
        expect(acc_a).to_have_attribute("data-source", "val")
        expect(acc_a).to_contain_text("0.540")
        expect(acc_b).to_have_attribute("data-source", "train")
        expect(acc_b).not_to_contain_text("×")  # training vs validation: no ratio
        expect(page.locator(f'#summary tr[data-run-id="{b.pk}"] td[data-col="iterations"]')).to_have_text("50")
        expect(page.locator(f'#summary tr[data-run-id="{b.pk}"] td[data-col="throughput_tok_s"]')).to_contain_text("×)")

        overflow = page.evaluate("document.scrollingElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"the page scrolls sideways by {overflow} px"
        state = page.locator(".picker-filters label", has_text="State")
        label_box, select_box = state.bounding_box(), state.locator("select").bounding_box()
        assert label_box["height"] < 40 and select_box["y"] < label_box["y"] + label_box["height"] and select_box["x"] > label_box["x"]
        assert page.evaluate("getComputedStyle(document.querySelector('.picker-filters input[name=tag]')).fontSize") == "13px"
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


def test_twenty_runs_of_ten_thousand_points_are_drawn_downsampled(live_web, team_user, tmp_path_factory):
    """The size of the compare benchmark (20 runs x 4 metrics x 10,000 points): every series
    arrives downsampled (at most 1,500 points, each spike kept) and is drawn; the draw time and
    the longest main-thread task are measured and printed (the numbers live in
    ``manage.py bench_compare``; this test checks that the page copes)."""
    import json

    from django.db import connection
    from playwright.sync_api import sync_playwright
    from runs.models import Experiment, Run

    alpha, user = team_user
    exp = Experiment.objects.create(team=alpha, name="big")
    runs = [Run.objects.create(experiment=exp, config={"model": "tiny", "rollout_policy": "seer" if i else "static-group"},
                               state=Run.State.SUCCEEDED, created_by=user) for i in range(20)]
    metrics = [THROUGHPUT, REWARD, "rollout/tail_time_s", "rollout/spec/accept_len"]
    with connection.cursor() as cur:  # 800,000 points in one statement; a spike at step 7777 of each series
        cur.execute("""INSERT INTO telemetry_metricpoint (run_id, name, step, value, wall_time)
                       SELECT r, m, s, CASE WHEN s = 7777 THEN 1000 ELSE sin(s / 50.0 + r) END, now()
                       FROM unnest(%s::bigint[]) r, unnest(%s::text[]) m, generate_series(0, 9999) s""",
                    [[r.pk for r in runs], metrics])
    query = f"runs={','.join(str(r.pk) for r in runs)}&metrics={','.join(metrics)}"
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    with sync_playwright() as pw:
        browser = _launch(pw)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        errors = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.add_init_script("""window.__longest = 0; new PerformanceObserver(l => l.getEntries().forEach(
            e => { window.__longest = Math.max(window.__longest, e.duration); })).observe({type: 'longtask', buffered: true});""")
        _login(page, live_web, f"/compare/?{query}")
        page.wait_for_function("document.body.dataset.compareDrawn !== undefined", timeout=120_000)
        per_chart = [int(page.get_attribute(f'.compare-chart[data-metric="{m}"]', "data-points")) for m in metrics]
        assert all(20 * 2 <= n <= 20 * 1500 for n in per_chart), per_chart
        assert int(page.evaluate("document.body.dataset.compareDrawn")) == sum(per_chart)
        measured = {"draw_ms": page.evaluate("window.__compareDrawMs"), "longest_task_ms": page.evaluate("window.__longest"),
                    "points_drawn": sum(per_chart)}
        browser.close()
    assert errors == []
    import requests

    token = requests.post(f"{live_web}/api/auth/token/", data={"username": "alice", "password": "pw-alpha-123"}).json()["token"]
    doc = requests.get(f"{live_web}/api/compare/?{query}", headers={"Authorization": f"Token {token}"}).json()
    assert all(1000.0 in one["y"] and 7777 in one["x"] for by_run in doc["series"].values() for one in by_run.values())
    out = tmp_path_factory.mktemp("bench") / "compare-draw.json"
    out.write_text(json.dumps(measured))
    print(f"\ncompare page, 20 runs x 4 metrics x 10,000 points: {measured}")
