"""The run queue (runs.queue) on the real database and Redis: runs start only when their
cluster can hold them, in fair order, one at a time on a cluster that holds one; the
waiting ones show their place. The cluster's resources are given to the queue step."""
import pytest
from rest_framework.test import APIClient

from runs import queue, ray_jobs
from runs.demand import GIB
from runs.lifecycle import transition
from runs.models import Run
from runs.services import request_cancel
from tests import factories

pytestmark = pytest.mark.django_db
CONFIG = {"model": "tiny", "iterations": 2, "rollout_instances": 2}  # 2 CPU, ~6.5 GiB
HOLDS_ONE = {"CPU": 3.0, "memory": 8.0 * GIB, "object_store_memory": 1e9}
HOLDS_MANY = {"CPU": 64.0, "memory": 256.0 * GIB}


def cluster(totals):
    return lambda config: totals


@pytest.fixture
def teams():
    """Teams alpha (alice) and beta (bob), each with an API client."""
    out = {}
    for slug, name in (("alpha", "alice"), ("beta", "bob")):
        team = factories.team(slug)
        client = APIClient()
        client.force_authenticate(factories.member(team, name))
        out[slug] = client
    return out


def submit(client, team: str, experiment: str = "ab", **config) -> int:
    resp = client.post("/api/runs/", {"team": team, "experiment": experiment, "config": {**CONFIG, **config}},
                       format="json")
    assert resp.status_code == 201, resp.content
    assert resp.json()["state"] == "queued"
    return resp.json()["id"]


def states(*ids) -> list[str]:
    return [Run.objects.get(pk=i).state for i in ids]


def end(run_id: int) -> None:
    transition(run_id, Run.State.RUNNING, "Ray job running")
    transition(run_id, Run.State.SUCCEEDED, "Ray job succeeded")


def test_three_runs_of_two_teams_start_one_at_a_time_in_fair_order(teams, client):
    a1 = submit(teams["alpha"], "alpha")
    a2 = submit(teams["alpha"], "alpha")
    b1 = submit(teams["beta"], "beta")

    assert queue.pump(cluster(HOLDS_ONE)).dispatched == [a1]
    assert states(a1, b1, a2) == ["dispatching", "queued", "queued"]
    assert "dispatched from the queue: needs 2 CPU" in Run.objects.get(pk=a1).events.last().reason
    # Round-robin: beta's run goes before alpha's second; both show their place.
    listed = {r["id"]: r["queue_position"] for r in teams["alpha"].get("/api/runs/").json()["results"]}
    assert listed == {a1: None, a2: 2}
    assert teams["beta"].get(f"/api/runs/{b1}/").json()["queue_position"] == 1
    assert queue.pump(cluster(HOLDS_ONE)) == queue.Decision([], waiting=2)  # no room: nothing moves

    end(a1)
    assert queue.pump(cluster(HOLDS_ONE)).dispatched == [b1]
    assert teams["alpha"].get(f"/api/runs/{a2}/").json()["queue_position"] == 1
    end(b1)
    assert queue.pump(cluster(HOLDS_ONE)) == queue.Decision([a2], waiting=0)
    started = Run.objects.filter(pk__in=[a1, b1, a2]).order_by("dispatched_at").values_list("pk", flat=True)
    assert list(started) == [a1, b1, a2]


def test_the_run_page_and_runs_list_show_a_queued_runs_place(teams, client):
    a1, a2 = submit(teams["alpha"], "alpha"), submit(teams["alpha"], "alpha")
    queue.pump(cluster(HOLDS_ONE))
    client.force_login(Run.objects.get(pk=a2).created_by)
    page = client.get(f"/runs/{a2}/").content.decode()
    assert 'id="queue-position"' in page and "#1 in the queue" in page
    assert 'id="queue-position"' not in client.get(f"/runs/{a1}/").content.decode()
    assert "#1 in queue" in client.get("/teams/alpha/runs/").content.decode()


def test_an_ab_pair_runs_one_after_the_other(teams):
    a = submit(teams["alpha"], "alpha", rollout_policy="seer")
    b = submit(teams["alpha"], "alpha", rollout_policy="verl")
    assert queue.pump(cluster(HOLDS_ONE)).dispatched == [a]
    assert states(b) == ["queued"]
    end(a)
    assert queue.pump(cluster(HOLDS_ONE)).dispatched == [b]


def test_a_cluster_with_room_takes_several_and_a_team_cap_passes_its_team_over(teams, settings):
    settings.UMBRA_TEAM_MAX_RUNNING = 1
    a1, a2 = submit(teams["alpha"], "alpha"), submit(teams["alpha"], "alpha")
    b1 = submit(teams["beta"], "beta")
    assert queue.pump(cluster(HOLDS_MANY)) == queue.Decision([a1, b1], waiting=1)
    settings.UMBRA_TEAM_MAX_RUNNING = 0
    assert queue.pump(cluster(HOLDS_MANY)).dispatched == [a2]


def test_a_run_on_an_idle_cluster_starts_at_once_even_if_larger_than_the_cluster(teams):
    big = submit(teams["alpha"], "alpha", rollout_instances=16)
    after = submit(teams["beta"], "beta")
    assert queue.pump(cluster(HOLDS_ONE)).dispatched == [big]
    assert "it has the cluster to itself" in Run.objects.get(pk=big).events.last().reason
    assert states(after) == ["queued"]  # the cluster is busy now


def test_the_head_of_the_line_is_not_overtaken_by_smaller_runs(teams):
    first = submit(teams["alpha"], "alpha", rollout_instances=1)
    big = submit(teams["beta"], "beta", rollout_instances=4)
    small = submit(teams["alpha"], "alpha", rollout_instances=1)
    totals = {"CPU": 4.0, "memory": 64.0 * GIB}  # first (1.5 CPU) leaves 2.5: big (3 CPU) waits
    assert queue.pump(cluster(totals)).dispatched == [first]
    assert queue.pump(cluster(totals)).dispatched == []
    assert states(big, small) == ["queued", "queued"]


def test_a_cancelled_queued_run_never_starts(teams):
    a1, a2 = submit(teams["alpha"], "alpha"), submit(teams["alpha"], "alpha")
    queue.pump(cluster(HOLDS_ONE))
    assert teams["alpha"].post(f"/api/runs/{a2}/cancel/").status_code == 202
    end(a1)
    assert queue.pump(cluster(HOLDS_ONE)) == queue.Decision([], waiting=0)
    assert states(a2) == ["cancelled"] and Run.objects.get(pk=a2).dispatched_at is None
    # cancelled between the pump's read and its move: the move is refused
    a3 = submit(teams["alpha"], "alpha")
    request_cancel(Run.objects.get(pk=a3))
    assert queue._take(a3, "dispatched from the queue") is False and states(a3) == ["cancelled"]


def test_a_cluster_that_does_not_answer_gets_one_run_whose_dispatch_reports_it(teams):
    def silent(config):
        raise ray_jobs.ClusterUnavailable("Ray cluster at http://x does not answer")

    a1, b1 = submit(teams["alpha"], "alpha"), submit(teams["beta"], "beta")
    assert queue.pump(silent) == queue.Decision([a1], waiting=1)
    assert "could not be read (Ray cluster at http://x does not answer)" in Run.objects.get(pk=a1).events.last().reason


def test_runs_for_another_cluster_wait_in_a_line_of_their_own(teams, settings):
    settings.UMBRA_ALLOWED_CLUSTERS = ["http://other:8265"]
    here = submit(teams["alpha"], "alpha")
    here2 = submit(teams["alpha"], "alpha")
    there = submit(teams["beta"], "beta", cluster="http://other:8265")
    assert queue.positions() == {here: 1, here2: 2, there: 1}
    assert queue.pump(cluster(HOLDS_ONE)) == queue.Decision([here, there], waiting=1)


def test_one_pump_decides_at_a_time(teams):
    from runs import leases

    submit(teams["alpha"], "alpha")
    assert leases.hold(queue.PUMP_LEASE_KEY, "someone-else", 30)
    try:
        assert queue.pump(cluster(HOLDS_MANY)) is None
        assert Run.objects.get().state == "queued"
    finally:
        leases.release(queue.PUMP_LEASE_KEY, "someone-else")
    assert queue.pump(cluster(HOLDS_MANY)).dispatched == [Run.objects.get().pk]


def test_a_model_whose_config_cannot_be_counted_does_not_stop_the_queue(teams, tmp_path):
    bad = []
    for name, hf in (("zero", {"num_attention_heads": 0}), ("inf", {"hidden_size": 1e400}),
                     ("negative", {"vocab_size": -5})):
        folder = tmp_path / name
        folder.mkdir()
        base = {"hidden_size": 64, "num_hidden_layers": 2, "vocab_size": 100, "num_attention_heads": 4}
        (folder / "config.json").write_text(__import__("json").dumps({**base, **hf}))
        bad.append(factories.run(factories.experiment(factories.team(f"t-{name}")),
                                 config={**CONFIG, "model": str(folder)}).pk)
    b1 = submit(teams["beta"], "beta")
    # each counted as the largest named model (no exception, no negative demand): all fit
    assert sorted(queue.pump(cluster(HOLDS_MANY)).dispatched) == sorted([*bad, b1])


def test_round_robin_is_per_cluster_a_team_busy_elsewhere_keeps_its_turn_here(teams, settings):
    settings.UMBRA_ALLOWED_CLUSTERS = ["http://big:8265"]
    b1, b2 = submit(teams["beta"], "beta"), submit(teams["beta"], "beta")
    a1 = submit(teams["alpha"], "alpha")
    elsewhere = submit(teams["alpha"], "alpha", cluster="http://big:8265")
    for totals in (HOLDS_ONE, HOLDS_ONE):
        queue.pump(lambda config: HOLDS_MANY if config.get("cluster") else totals)
        for run in Run.objects.filter(state="dispatching").exclude(pk=elsewhere):
            end(run.pk)
    # on the default cluster: beta first (it queued first), then alpha, whatever alpha does on "big"
    assert Run.objects.get(pk=elsewhere).dispatched_at is not None
    order = list(Run.objects.filter(pk__in=[b1, b2, a1], dispatched_at__isnull=False)
                 .order_by("dispatched_at").values_list("pk", flat=True))
    assert order == [b1, a1]


def test_a_dispatch_message_of_an_earlier_attempt_does_not_start_the_resumed_run(teams):
    from runs import dispatch
    from runs.services import request_resume

    a1 = submit(teams["alpha"], "alpha")
    queue.pump(cluster(HOLDS_ONE))  # the pump chose attempt 0; its dispatch is retrying
    transition(a1, Run.State.CANCELLED, "cancelled; the cluster did not answer")
    request_resume(Run.objects.get(pk=a1))  # attempt 1 waits in the queue
    assert dispatch.dispatch(a1, attempt=0) == dispatch.DONE
    assert states(a1) == ["queued"] and Run.objects.get(pk=a1).ray_job_id == ""


def test_a_cancel_of_a_run_the_pump_took_meanwhile_stops_its_job(teams):
    from unittest import mock

    from runs import services

    a1 = submit(teams["alpha"], "alpha")
    stale = Run.objects.get(pk=a1)  # read while queued
    queue.pump(cluster(HOLDS_ONE))
    with mock.patch.object(services.cancel_run, "delay") as cancel:
        request_cancel(stale)
    cancel.assert_called_once_with(a1)
    assert states(a1) == ["dispatching"]  # the job is stopped; the follow task records the cancel


class _RefusingJobsApi:
    """A Jobs API that answers but refuses every submission (as Ray's does when the head's job
    agent never started: its port was taken by another cluster's)."""

    def __init__(self, error: Exception):
        self.error = error

    def get_job_info(self, submission_id):
        raise RuntimeError(f"Request failed with status code 404: Job {submission_id} does not exist.")

    def list_jobs(self):
        return []

    def submit_job(self, **kwargs):
        raise self.error


@pytest.mark.parametrize("error, retried", [
    (RuntimeError("Request failed with status code 500: No available agent to submit job"), True),
    (__import__("requests").ConnectionError("Remote end closed connection without response"), True),
    (KeyError("an error nobody foresaw"), False)])
def test_a_refused_or_failed_submission_never_leaves_the_run_dispatching(teams, error, retried):
    from unittest import mock

    from runs import dispatch

    a1 = submit(teams["alpha"], "alpha")
    queue.pump(cluster(HOLDS_ONE))
    with mock.patch.object(ray_jobs, "client_for", return_value=_RefusingJobsApi(error)):
        step = dispatch.dispatch(a1, attempt=0)
        if retried:  # the Jobs API's refusal may pass (a restarting agent): retried, then failed
            assert isinstance(step, dispatch.Retry) and states(a1) == ["dispatching"]
            assert dispatch.dispatch(a1, final_try=True, attempt=0) == dispatch.DONE
        else:
            assert step == dispatch.DONE
    run = Run.objects.get(pk=a1)
    assert run.state == "failed" and run.ray_job_id == ""
    reason = run.events.last().reason
    assert ("the job" in reason and ("No available agent" in reason or "closed connection" in reason)) \
        if retried else "dispatch failed: KeyError" in reason, reason
