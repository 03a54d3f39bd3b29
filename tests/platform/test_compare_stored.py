"""Ended runs' downsampled series and statistics are stored once (issue 17): a comparison
of ended runs reads them back with the Redis cache empty and the points gone; a running
run's are never stored; a row of an older run version is recomputed, not served."""
import pytest
from django.core.cache import cache
from rest_framework.test import APIClient

from compare.models import StoredDerived
from compare.tasks import warm_run_caches
from runs.models import Run
from telemetry.models import MetricPoint
from tests import factories

pytestmark = pytest.mark.django_db
THROUGHPUT = "rollout/throughput_tok_s"


@pytest.fixture
def api():
    team = factories.team("alpha")
    client = APIClient()
    client.force_authenticate(factories.member(team, "alice"))
    client.team = team
    return client


def _run(team, state, values):
    run = factories.run(factories.experiment(team, "exp"), config={"model": "tiny"})
    Run.objects.filter(pk=run.pk).update(state=state)
    MetricPoint.objects.bulk_create([MetricPoint(run=run, name=THROUGHPUT, step=i, value=v) for i, v in enumerate(values)])
    return run


def _compare(api, *runs):
    resp = api.get(f"/api/compare/?runs={','.join(str(r.pk) for r in runs)}&metrics={THROUGHPUT}")
    assert resp.status_code == 200, resp.content
    return resp.json()


def test_an_ended_runs_series_and_stats_are_read_from_storage(api):
    ended = _run(api.team, Run.State.SUCCEEDED, [100.0, 110.0, 120.0])
    running = _run(api.team, Run.State.RUNNING, [50.0, 60.0])
    assert warm_run_caches(ended.pk) >= 1  # what the run's end does
    assert set(StoredDerived.objects.filter(run=ended).values_list("kind", flat=True)) == {"series-1500", "stats", "names"}
    first = _compare(api, ended, running)
    assert not StoredDerived.objects.filter(run=running).exists()
    MetricPoint.objects.filter(run=ended).delete()  # only the stored rows can answer now
    cache.clear()
    again = _compare(api, ended, running)
    assert again["series"][THROUGHPUT][str(ended.pk)] == first["series"][THROUGHPUT][str(ended.pk)]
    assert again["series"][THROUGHPUT][str(ended.pk)]["y"] == [100.0, 110.0, 120.0]
    assert {r["id"]: r["summary"]["throughput_tok_s"] for r in again["runs"]}[ended.pk] == 110.0


def test_a_stored_row_of_an_older_version_is_recomputed(api):
    run = _run(api.team, Run.State.FAILED, [1.0, 2.0])
    _compare(api, run)  # stored on first read
    MetricPoint.objects.create(run=run, name=THROUGHPUT, step=2, value=9.0)
    Run.objects.filter(pk=run.pk).update(metrics_version=run.metrics_version + 1)  # as ingest bumps it
    assert _compare(api, run)["series"][THROUGHPUT][str(run.pk)]["y"] == [1.0, 2.0, 9.0]
    assert StoredDerived.objects.filter(run=run, kind="series-1500").count() == 1


def test_a_metric_an_ended_run_never_logged_is_stored_as_none_and_not_served(api):
    run = _run(api.team, Run.State.SUCCEEDED, [1.0])
    doc = api.get(f"/api/compare/?runs={run.pk}&metrics={THROUGHPUT},reward/mean").json()
    assert str(run.pk) not in doc["series"].get("reward/mean", {})
    assert StoredDerived.objects.get(run=run, kind="series-1500", part="reward/mean").value is None
    MetricPoint.objects.filter(run=run).delete()
    cache.clear()
    doc = api.get(f"/api/compare/?runs={run.pk}&metrics={THROUGHPUT},reward/mean").json()
    assert doc["series"][THROUGHPUT][str(run.pk)]["y"] == [1.0] and "reward/mean" not in doc["series"]
