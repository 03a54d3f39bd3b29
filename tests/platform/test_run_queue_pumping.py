"""When the queue is looked at (runs.tasks): on submit, resume, a run's end and every
worker start, at most one pump message at a time, and again later while runs wait; the
recovery after a restart takes the queue up from the database. Celery's sending is
recorded; the pump itself runs for real."""
from unittest import mock

import pytest
from django.core.cache import cache

from runs import leases, queue, ray_jobs, tasks
from runs.demand import GIB
from runs.lifecycle import transition
from runs.models import Run
from runs.services import create_run, request_resume
from tests import factories
from umbra.config import RunConfig

pytestmark = pytest.mark.django_db
CONFIG = RunConfig(model="tiny", iterations=2, rollout_instances=2)  # 2 CPU
# Room for three such runs by CPU.
CLUSTER = {"CPU": 6.5, "memory": 100.0 * GIB}


@pytest.fixture(autouse=True)
def no_pump_flags():
    for key in (tasks._PUMP_REQUESTED_KEY, tasks._PUMP_SCHEDULED_KEY):
        cache.delete(key)
    yield
    for key in (tasks._PUMP_REQUESTED_KEY, tasks._PUMP_SCHEDULED_KEY):
        cache.delete(key)


@pytest.fixture
def celery():
    """Record what would be sent to Celery: pump requests, delayed pumps, dispatches, follows."""
    with mock.patch.object(tasks.pump_queue, "delay") as pump, \
            mock.patch.object(tasks.pump_queue, "apply_async") as later, \
            mock.patch.object(tasks.dispatch_run, "delay") as dispatch, \
            mock.patch.object(tasks.follow_run, "delay") as follow:
        yield type("Sent", (), {"pump": pump, "later": later, "dispatch": dispatch, "follow": follow})


@pytest.fixture
def cluster(monkeypatch):
    monkeypatch.setattr(ray_jobs, "cluster_totals", lambda config: CLUSTER)


def test_a_burst_of_submissions_sends_one_pump(team_user, celery, cluster, django_capture_on_commit_callbacks):
    team, user = team_user
    with django_capture_on_commit_callbacks(execute=True):
        for _ in range(5):
            create_run(user, team, "burst", CONFIG)
    assert celery.pump.call_count == 1
    tasks.pump_queue.run()  # started: the next submission asks again
    with django_capture_on_commit_callbacks(execute=True):
        create_run(user, team, "burst", CONFIG)
    assert celery.pump.call_count == 2


def test_the_pump_dispatches_what_fits_and_looks_again_while_runs_wait(team_user, celery, cluster, settings):
    team, user = team_user
    runs = [create_run(user, team, "q", CONFIG).pk for _ in range(4)]
    assert tasks.pump_queue.run() == 3
    assert [c.args[0] for c in celery.dispatch.call_args_list] == runs[:3]
    celery.later.assert_called_once_with(kwargs={"scheduled": True}, countdown=settings.UMBRA_QUEUE_RETRY_S)
    assert tasks.pump_queue.run() == 0 and celery.later.call_count == 1  # one delayed look at a time
    assert tasks.pump_queue.run(scheduled=True) == 0 and celery.later.call_count == 2  # it schedules the next


def test_a_pump_that_finds_another_deciding_looks_again_soon(team_user, celery, cluster):
    team, user = team_user
    create_run(user, team, "q", CONFIG)
    leases.hold(queue.PUMP_LEASE_KEY, "other", 30)
    try:
        assert tasks.pump_queue.run() == 0
    finally:
        leases.release(queue.PUMP_LEASE_KEY, "other")
    celery.later.assert_called_once_with(kwargs={"scheduled": True}, countdown=tasks.PUMP_BUSY_WAIT_S)


def test_a_run_that_ends_and_a_resume_ask_for_a_pump(running_run, celery, django_capture_on_commit_callbacks):
    run, _ = running_run
    with django_capture_on_commit_callbacks(execute=True):
        transition(run.pk, Run.State.FAILED, "Ray job failed")
    assert celery.pump.call_count == 1
    cache.delete(tasks._PUMP_REQUESTED_KEY)
    before = Run.objects.get(pk=run.pk).queued_at
    with django_capture_on_commit_callbacks(execute=True):
        assert request_resume(run)
    assert celery.pump.call_count == 2 and not celery.dispatch.called
    assert Run.objects.get(pk=run.pk).queued_at > before  # the attempt joins the end of the line


def test_recovery_after_a_restart_takes_the_queue_up_from_the_database(team_user, celery, cluster):
    """A worker start (recover_runs): dispatching runs are dispatched again, running ones
    followed, and the queued ones go through the queue: the pump dispatches what fits."""
    team, user = team_user
    exp = factories.experiment(team, "q")
    running = factories.run(exp, config=CONFIG.model_dump(), state="running")
    chosen = factories.run(exp, config=CONFIG.model_dump(), state="dispatching")
    waiting = [create_run(user, team, "q", CONFIG).pk for _ in range(2)]
    assert tasks.recover_runs.run() == 2
    assert [c.args for c in celery.dispatch.call_args_list] == [(chosen.pk, chosen.attempt)]  # the attempt it was chosen at
    assert [c.args for c in celery.follow.call_args_list] == [(running.pk,)]
    assert celery.pump.called and all(pk not in dict(celery.dispatch.call_args_list) for pk in waiting)

    celery.pump.side_effect = lambda: tasks.pump_queue.run()  # the message the worker then takes
    tasks.recover_runs.run()
    # 2 + 2 CPU held of 6.5: the first waiting run fits, the second waits and is looked at again.
    assert [c.args[0] for c in celery.dispatch.call_args_list[-1:]] == [waiting[0]]
    assert [Run.objects.get(pk=pk).state for pk in waiting] == ["dispatching", "queued"]
    assert celery.later.called
