"""A custom reward's extra numbers on the compare page: ``reward_extras`` in GET /api/compare/
lists the ``reward/extra/<key>`` names any compared run logged (what the page's metric picker
offers), an ended run's list is stored like its series, and a picked key comes back as series."""
import pytest
from django.core.cache import cache
from rest_framework.test import APIClient

from compare.models import StoredDerived
from runs.models import Run
from telemetry.models import MetricPoint
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def api():
    team = factories.team("alpha")
    client = APIClient()
    client.force_authenticate(factories.member(team, "alice"))
    client.team = team
    return client


def _run(team, state, names):
    run = factories.run(factories.experiment(team, "exp"), config={"model": "tiny"})
    Run.objects.filter(pk=run.pk).update(state=state)
    MetricPoint.objects.bulk_create([MetricPoint(run=run, name=n, step=s, value=0.5) for n in names for s in range(3)])
    return run


def test_compare_lists_the_reward_extras_the_runs_logged_and_serves_a_picked_one(api):
    ended = _run(api.team, Run.State.SUCCEEDED, ["reward/mean", "reward/extra/format", "reward/extra/correct"])
    running = _run(api.team, Run.State.RUNNING, ["reward/mean", "reward/extra/format", "reward/extra/length_ok"])
    plain = _run(api.team, Run.State.SUCCEEDED, ["reward/mean", "reward/errors"])
    ids = f"{ended.pk},{running.pk},{plain.pk}"
    doc = api.get(f"/api/compare/?runs={ids}&metrics=reward/mean").json()
    assert doc["reward_extras"] == ["reward/extra/correct", "reward/extra/format", "reward/extra/length_ok"]
    assert api.get(f"/api/compare/?runs={plain.pk}").json()["reward_extras"] == []

    picked = api.get(f"/api/compare/?runs={ids}&metrics=reward/extra/format").json()
    assert picked["metrics"] == ["reward/extra/format"]
    assert set(picked["series"]["reward/extra/format"]) == {str(ended.pk), str(running.pk)}

    # the ended run's list is stored: read back with its points gone and the cache empty
    assert StoredDerived.objects.get(run=ended, kind="names").value == ["reward/extra/correct", "reward/extra/format"]
    assert not StoredDerived.objects.filter(run=running, kind="names").exists()
    MetricPoint.objects.filter(run=ended).delete()
    cache.clear()
    assert api.get(f"/api/compare/?runs={ended.pk}").json()["reward_extras"] == ["reward/extra/correct",
                                                                                 "reward/extra/format"]
