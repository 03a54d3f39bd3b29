"""Leases in the real Redis cache, and how follow chains use them to collapse to one."""
import time
import uuid
from unittest import mock

import pytest

from runs import leases
from runs.models import Run
from runs.dispatch import follow_lease_s
from runs.tasks import follow_run
from tests import factories

from ..conftest import free_port


@pytest.fixture
def key():
    k = f"test-lease:{uuid.uuid4().hex}"
    yield k
    leases.release(k, "a")
    leases.release(k, "b")


def test_one_holder_at_a_time(key):
    assert leases.hold(key, "a", 30)
    assert not leases.hold(key, "b", 30)
    assert leases.hold(key, "a", 30)  # renewal
    leases.release(key, "b")  # not b's: kept
    assert not leases.hold(key, "b", 30)
    leases.release(key, "a")
    assert leases.hold(key, "b", 30)


def test_an_unrenewed_lease_lapses(key):
    assert leases.hold(key, "a", 1)
    assert not leases.hold(key, "b", 1)
    time.sleep(2.1)
    assert leases.hold(key, "b", 1)
    assert not leases.hold(key, "a", 1)


@pytest.mark.django_db
def test_a_second_follow_chain_ends_without_polling(team_user, settings):
    team, user = team_user
    run = factories.run(factories.experiment(team, "e"), state=Run.State.RUNNING, created_by=user)
    # Nothing listens there: a chain that polled would fail the run.
    settings.RAY_ADDRESS = f"http://127.0.0.1:{free_port()}"
    key = f"runs:follow:{run.pk}"
    assert leases.hold(key, "live-chain", 30)
    try:
        with mock.patch.object(follow_run, "apply_async") as later:
            follow_run(run.pk, "other-chain")  # a duplicate chain: ends
            assert later.call_count == 0
            follow_run(run.pk)  # a new chain: looks once more when a dead holder's lease has lapsed
            (args,), kwargs = later.call_args
            assert args[0] == run.pk and args[1] not in (None, "live-chain")
            assert kwargs == {"countdown": follow_lease_s()}
    finally:
        leases.release(key, "live-chain")
    run.refresh_from_db()
    assert run.state == Run.State.RUNNING and not run.events.exists()
