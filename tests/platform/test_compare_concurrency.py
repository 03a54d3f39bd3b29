"""The comparison flags pairs of runs whose rollouts overlapped in time on the same
cluster (their throughput ratio is not comparable), and shows no ratio for a metric a
run does not have (accept length without speculation) or against a near-zero reference."""
from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from runs.models import Run
from telemetry.models import MetricPoint
from tests import factories

pytestmark = pytest.mark.django_db
T0 = timezone.now() - timedelta(hours=3)


@pytest.fixture
def api():
    team = factories.team("alpha")
    client = APIClient()
    client.force_authenticate(factories.member(team, "alice"))
    client.team = team
    return client


def _run(team, start_min, end_min, cluster="", **config):
    run = factories.run(factories.experiment(team, "exp"), config={"model": "tiny", "cluster": cluster, **config})
    Run.objects.filter(pk=run.pk).update(
        state=Run.State.SUCCEEDED if end_min is not None else Run.State.RUNNING,
        dispatched_at=T0 + timedelta(minutes=start_min),
        finished_at=None if end_min is None else T0 + timedelta(minutes=end_min))
    return run


def _concurrent(api, *runs):
    resp = api.get(f"/api/compare/?runs={','.join(str(r.pk) for r in runs)}")
    assert resp.status_code == 200, resp.content
    return resp.json()["concurrent"]


def test_overlapping_runs_on_one_cluster_are_flagged_and_sequential_ones_not(api):
    first = _run(api.team, 0, 10)
    overlapping = _run(api.team, 5, 20)
    after = _run(api.team, 20, 30)  # starts when the one before ends: no overlap
    still_running = _run(api.team, 25, None)
    assert _concurrent(api, first, overlapping) == [[first.pk, overlapping.pk]]
    assert _concurrent(api, first, after) == []
    assert _concurrent(api, overlapping, after) == []
    assert _concurrent(api, after, still_running) == [[after.pk, still_running.pk]]


def test_overlap_on_different_clusters_or_a_run_never_dispatched_is_not_flagged(api, settings):
    settings.UMBRA_ALLOWED_CLUSTERS = ["ray://other:10001"]
    here = _run(api.team, 0, 10)
    elsewhere = _run(api.team, 0, 10, cluster="ray://other:10001")
    never = factories.run(factories.experiment(api.team, "exp"), config={"model": "tiny"})
    assert _concurrent(api, here, elsewhere, never) == []


def test_no_accept_length_ratio_without_speculation_nor_against_a_near_zero_reference(api):
    ref = _run(api.team, 0, 1, rollout_policy="verl", spec_decoding=False)
    spec = _run(api.team, 2, 3, rollout_policy="seer", spec_decoding=True)
    for run, accept, reward in ((ref, 1.0, 1e-9), (spec, 2.5, 0.4)):
        MetricPoint.objects.bulk_create([MetricPoint(run=run, name="rollout/spec/accept_len", step=0, value=accept),
                                         MetricPoint(run=run, name="reward/mean", step=0, value=reward)])
    doc = api.get(f"/api/compare/?runs={ref.pk},{spec.pk}&reference={ref.pk}").json()
    rows = {r["id"]: r for r in doc["runs"]}
    assert rows[ref.pk]["summary"]["accept_len"] is None  # logged, but the run does not speculate
    assert rows[spec.pk]["summary"]["accept_len"] == 2.5 and rows[spec.pk]["ratios"]["accept_len"] is None
    assert rows[spec.pk]["ratios"]["reward"] is None  # reference reward ~0


def test_a_run_that_shared_its_cluster_with_runs_outside_the_comparison_is_flagged(api, settings):
    settings.UMBRA_ALLOWED_CLUSTERS = ["ray://other:10001"]
    first = _run(api.team, 0, 10)
    overlapping = _run(api.team, 5, 20)
    after = _run(api.team, 20, 30)
    beta = factories.team("beta")
    theirs = _run(beta, 25, 28)  # another team's run: counted, its id not shown
    elsewhere = _run(beta, 21, 29, cluster="ray://other:10001")  # another cluster: not counted
    doc = api.get(f"/api/compare/?runs={overlapping.pk},{after.pk}").json()
    assert doc["concurrent"] == []
    assert doc["shared_cluster"] == {str(overlapping.pk): {"runs": [first.pk], "hidden": 0},
                                     str(after.pk): {"runs": [], "hidden": 1}}
    assert theirs.pk and elsewhere.pk  # neither is named above
    alone = api.get(f"/api/compare/?runs={first.pk},{overlapping.pk}").json()
    assert alone["concurrent"] == [[first.pk, overlapping.pk]] and alone["shared_cluster"] == {}
