"""The compare summary's accuracy column reads validation accuracy (``val/accuracy``) where a
run has it and training accuracy (``reward/accuracy``) otherwise, says which (``sources``),
and gives no ratio between the two; the compare page's run picker says when it shows only
the latest runs instead of dropping the rest silently."""
import pytest
from django.test import Client
from rest_framework.test import APIClient

from compare.summary import STAT_METRICS, ratios, summary_row, summary_sources
from compare.views import PICKER_LIMIT
from runs.models import Run
from telemetry.models import MetricPoint
from tests import factories

pytestmark = pytest.mark.django_db


def test_accuracy_prefers_validation_and_says_which():
    assert "val/accuracy" in STAT_METRICS and "reward/accuracy" in STAT_METRICS
    train = {"reward/accuracy": {"median": 0.2, "last": 0.3, "count": 3}}
    both = {**train, "val/accuracy": {"median": 0.5, "last": 0.6, "count": 2}}
    assert summary_row(both)["accuracy"] == 0.6 and summary_sources(both) == {"accuracy": "val/accuracy"}
    assert summary_row(train)["accuracy"] == 0.3 and summary_sources(train) == {"accuracy": "reward/accuracy"}
    assert summary_row({})["accuracy"] is None and summary_sources({}) == {}
    # like with like only: validation accuracy has no ratio to a training accuracy
    assert ratios(summary_row(both), summary_row(train), summary_sources(both), summary_sources(train))["accuracy"] is None
    assert ratios(summary_row(train), summary_row(train), summary_sources(train), summary_sources(train))["accuracy"] == 1.0


def test_api_names_the_accuracy_each_run_reports():
    team = factories.team("alpha")
    api = APIClient()
    api.force_authenticate(factories.member(team, "alice"))
    exp = factories.experiment(team, "exp")
    val, train = (factories.run(exp, config={"model": "tiny", "rollout_policy": p}) for p in ("static-group", "seer"))
    MetricPoint.objects.bulk_create(
        [MetricPoint(run=r, name="reward/accuracy", step=s, value=0.25) for r in (val, train) for s in range(3)]
        + [MetricPoint(run=val, name="val/accuracy", step=s, value=0.5 + s / 10) for s in range(3)])
    doc = api.get(f"/api/compare/?runs={val.pk},{train.pk}&reference={val.pk}").json()
    rows = {r["id"]: r for r in doc["runs"]}
    assert rows[val.pk]["summary"]["accuracy"] == pytest.approx(0.7) and rows[val.pk]["sources"] == {"accuracy": "val/accuracy"}
    assert rows[train.pk]["summary"]["accuracy"] == 0.25 and rows[train.pk]["sources"] == {"accuracy": "reward/accuracy"}
    assert rows[train.pk]["ratios"]["accuracy"] is None


def test_picker_says_when_it_shows_only_the_latest_runs():
    team = factories.team("alpha")
    user = factories.member(team, "alice")
    exp = factories.experiment(team, "many")
    Run.objects.bulk_create([Run(experiment=exp, config={"model": "tiny"}, created_by=user)
                             for _ in range(PICKER_LIMIT + 5)])
    client = Client()
    client.force_login(user)
    page = client.get("/compare/")
    assert page.status_code == 200
    assert len(page.context["candidates"]) == PICKER_LIMIT and page.context["matching"] == PICKER_LIMIT + 5
    html = page.content.decode()
    assert f"Showing the latest {PICKER_LIMIT} of {PICKER_LIMIT + 5} matching runs" in html and 'id="picker-truncated"' in html
    # a narrower filter shows every match, with no such note
    Run.objects.filter(pk=Run.objects.order_by("pk").first().pk).update(state=Run.State.FAILED)
    narrow = client.get("/compare/?state=failed")
    assert len(narrow.context["candidates"]) == 1 and 'id="picker-truncated"' not in narrow.content.decode()


def test_a_named_run_is_labelled_by_its_name():
    from compare.services import label

    team = factories.team("alpha")
    exp = factories.experiment(team, "gsm8k")
    named = factories.run(exp, config={"model": "tiny", "rollout_policy": "seer"}, name="lr3e-6")
    bare = factories.run(exp, config={"model": "tiny", "rollout_policy": "verl"})
    assert label(named) == f"#{named.pk} lr3e-6 · Alpha/gsm8k seer"
    assert label(bare) == f"#{bare.pk} Alpha/gsm8k verl"
