"""Following a run: a Ray cluster that does not answer fails the run only after a grace
period (one hiccup of the dashboard must not end hours of training)."""
import time
from unittest import mock

import pytest
from django.core.cache import cache

from runs.models import Run
from runs.tasks import follow_run

pytestmark = pytest.mark.django_db


def test_an_unreachable_cluster_fails_the_run_only_after_the_grace_period(running_run, settings):
    run, _ = running_run
    Run.objects.filter(pk=run.pk).update(config={"model": "tiny", "cluster": "http://127.0.0.1:1"})
    key = f"runs:follow-error-since:{run.pk}"
    cache.delete(key)
    with mock.patch.object(follow_run, "apply_async") as later:  # Celery's scheduling; the poll itself is real
        follow_run(run.pk, "chain-1")
        assert Run.objects.get(pk=run.pk).state == "running" and later.called
        cache.set(key, time.time() - settings.UMBRA_FOLLOW_GRACE_S - 1)  # the cluster has been silent too long
        follow_run(run.pk, "chain-1")
    run.refresh_from_db()
    assert run.state == "failed" and "is gone" in run.events.last().reason
    assert cache.get(key) is None  # a resumed attempt starts with a fresh grace period
