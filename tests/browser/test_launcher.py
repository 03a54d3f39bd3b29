"""Headless Chromium on the launcher (issue 17): Clone on a run page opens the form
prefilled and a changed copy is submitted; the A/B button queues the baseline and seer,
the second waiting for the first, and its page opens their comparison once both end; the
compare page flags runs that overlapped on one cluster and not runs that ran one after
the other."""
import os
import re
from datetime import timedelta

import pytest

from tests.browser.test_compare import _launch

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
CONFIG = {"model": "tiny", "dataset": "arith", "prompts_per_iteration": 4, "group_size": 4, "max_tokens": 32,
          "iterations": 2, "rollout_instances": 2, "rollout_policy": "static-group"}
ROOMY = {"CPU": 64.0, "memory": 256.0 * 2**30}


def _page(pw, live_web, path):
    browser = _launch(pw)
    page = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{live_web}/accounts/login/?next={path}")
    page.fill("#id_username", "alice")
    page.fill("#id_password", "pw-alpha-123")
    page.click("#login")
    page.wait_for_url(f"**{path.split('?')[0]}**")
    return browser, page, errors


def test_clone_a_run_and_submit_it_changed(live_web, team_user):
    from playwright.sync_api import expect, sync_playwright

    from runs.models import Experiment, Run
    from umbra.config import RunConfig

    team, user = team_user
    full = RunConfig(**{**CONFIG, "group_size": 6, "rollout_policy": "seer"}).model_dump()
    source = Run.objects.create(experiment=Experiment.objects.create(team=team, name="cloned-exp"), config=full,
                                state=Run.State.SUCCEEDED, created_by=user)
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    with sync_playwright() as pw:
        browser, page, errors = _page(pw, live_web, f"/runs/{source.pk}/")
        page.click("#clone-run")
        page.wait_for_url(f"**/runs/new/?clone={source.pk}")
        expect(page.locator("#id_group_size")).to_have_value("6")
        expect(page.locator("#id_rollout_policy")).to_have_value("seer")
        expect(page.locator("#id_experiment")).to_have_value("cloned-exp")
        page.fill("#id_group_size", "5")
        page.click("#submit-run")
        page.wait_for_url("**/runs/*/")
        clone = Run.objects.exclude(pk=source.pk).get()
        assert page.url.endswith(f"/runs/{clone.pk}/")
        assert clone.config == {**source.config, "group_size": 5}
        assert clone.experiment.name == "cloned-exp" and clone.state == Run.State.QUEUED
        assert errors == []
        browser.close()


def test_ab_queues_two_runs_in_order_and_opens_their_comparison(live_web, team_user):
    from playwright.sync_api import expect, sync_playwright

    from runs import queue
    from runs.lifecycle import transition
    from runs.models import Run

    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    with sync_playwright() as pw:
        browser, page, errors = _page(pw, live_web, "/teams/alpha/runs/new/")
        for name in ("prompts_per_iteration", "group_size", "max_tokens", "iterations"):
            page.fill(f"#id_{name}", str(CONFIG[name]))
        page.fill("#id_model", "tiny")
        page.click("#submit-ab")
        page.wait_for_url("**/teams/alpha/ab/*/")
        base, seer = Run.objects.order_by("pk")
        assert (base.config["rollout_policy"], seer.config["rollout_policy"]) == ("verl", "seer")
        assert seer.after_id == base.pk and base.experiment_id == seer.experiment_id
        expect(page.locator(f'#ab-runs tr[data-run="{seer.pk}"]')).to_contain_text(f"run #{base.pk} to end")

        assert queue.pump(lambda config: ROOMY).dispatched == [base.pk]  # room for both, yet one at a time
        transition(base.pk, Run.State.RUNNING, "Ray job running")
        expect(page.locator(f'#ab-runs tr[data-run="{base.pk}"] .badge')).to_contain_text("running", timeout=15_000)
        assert queue.pump(lambda config: ROOMY).dispatched == []
        assert Run.objects.get(pk=seer.pk).state == Run.State.QUEUED
        transition(base.pk, Run.State.SUCCEEDED, "Ray job succeeded")
        assert queue.pump(lambda config: ROOMY).dispatched == [seer.pk]
        transition(seer.pk, Run.State.RUNNING, "Ray job running")
        transition(seer.pk, Run.State.SUCCEEDED, "Ray job succeeded")
        page.wait_for_url("**/compare/?runs=*", timeout=15_000)  # the page reloads itself, then redirects
        assert f"{base.pk}%2C{seer.pk}" in page.url
        expect(page.locator("body")).to_have_attribute("data-compare-state", "ready", timeout=20_000)
        assert errors == []
        browser.close()


def test_concurrency_flag_for_overlapping_runs_and_not_for_sequential_ones(live_web, team_user):
    from django.utils import timezone
    from playwright.sync_api import expect, sync_playwright

    from runs.models import Experiment, Run
    from telemetry.models import MetricPoint

    team, user = team_user
    exp = Experiment.objects.create(team=team, name="overlap")
    t0 = timezone.now() - timedelta(hours=2)

    def run(policy, start, end):
        return Run.objects.create(experiment=exp, config={**CONFIG, "rollout_policy": policy}, created_by=user,
                                  state=Run.State.SUCCEEDED, dispatched_at=t0 + timedelta(minutes=start),
                                  finished_at=t0 + timedelta(minutes=end))

    # a and b overlap; c starts as b ends (touching ends do not overlap); d runs alone later
    a, b, c, d = run("verl", 0, 10), run("seer", 5, 15), run("seer", 15, 25), run("verl", 30, 40)
    MetricPoint.objects.bulk_create([MetricPoint(run=r, name=name, step=step, value=100.0 + step)
                                     for r in (c, d) for step in range(3)
                                     for name in ("rollout/throughput_tok_s", "rollout/decode_tok_s")])
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    with sync_playwright() as pw:
        browser, page, errors = _page(pw, live_web, f"/compare/?runs={a.pk},{b.pk}")
        expect(page.locator("body")).to_have_attribute("data-compare-state", "ready", timeout=20_000)
        flag = page.locator("#concurrency-flag")
        expect(flag).to_be_visible()
        expect(flag).to_contain_text("Ran concurrently: throughput ratios are not comparable")
        expect(flag).to_contain_text(f"#{a.pk} and #{b.pk}")
        page.goto(f"{live_web}/compare/?runs={b.pk},{c.pk}")  # b overlapped a, outside this comparison
        expect(page.locator("body")).to_have_attribute("data-compare-state", "ready", timeout=20_000)
        expect(page.locator("#concurrency-flag")).to_contain_text(f"#{b.pk} shared its cluster with #{a.pk}")
        expect(page.locator("#concurrency-flag")).not_to_contain_text(f"#{c.pk}")
        page.goto(f"{live_web}/compare/?runs={c.pk},{d.pk}")
        expect(page.locator("body")).to_have_attribute("data-compare-state", "ready", timeout=20_000)
        expect(page.locator("#concurrency-flag")).to_be_hidden()
        page.locator("#metric-picker > summary").click()  # the picker adds a metric to the view
        expect(page.locator('#metric-picker input[data-metric="rollout/tail_time_s"]')).to_be_checked()  # a default
        page.locator('#metric-picker input[data-metric="rollout/decode_tok_s"]').check()
        expect(page).to_have_url(re.compile(r"metrics=[^&]*rollout(%2F|/)decode_tok_s"))
        expect(page.locator('.compare-chart[data-metric="rollout/decode_tok_s"]')).to_have_count(1)
        assert errors == []
        browser.close()
