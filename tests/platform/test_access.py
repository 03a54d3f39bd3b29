"""Another team's runs do not exist for a user: pages, JSON, actions and WebSockets."""
import pytest
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator

from runs.models import Run
from tests import factories


@pytest.fixture
def other_run():
    team = factories.team("beta")
    bob = factories.member(team, "bob")
    return factories.run(factories.experiment(team, "secret"), state=Run.State.RUNNING, created_by=bob)


@pytest.mark.django_db
def test_other_teams_run_is_404_everywhere(client, team_user, other_run):
    _, alice = team_user
    client.force_login(alice)
    for url in (f"/runs/{other_run.pk}/", f"/runs/{other_run.pk}/series.json", "/teams/beta/runs/",
                "/teams/beta/runs/new/"):
        assert client.get(url).status_code == 404, url
    assert client.post(f"/runs/{other_run.pk}/cancel/").status_code == 404
    assert Run.objects.get(pk=other_run.pk).state == Run.State.RUNNING
    listing = client.get("/teams/alpha/runs/").content.decode()
    assert "secret" not in listing


@pytest.mark.django_db
def test_anonymous_is_sent_to_login(client, other_run):
    resp = client.get(f"/runs/{other_run.pk}/")
    assert resp.status_code == 302 and "/accounts/login/" in resp["Location"]


@pytest.mark.django_db(transaction=True)
def test_websocket_refuses_other_teams_run_and_admits_own(team_user, other_run):
    from umbra_site.asgi import application

    team, alice = team_user
    mine = factories.run(factories.experiment(team, "mine"), config={}, state=Run.State.RUNNING, created_by=alice)

    async def connect(run_id):
        comm = WebsocketCommunicator(application, f"/ws/runs/{run_id}/", headers=[(b"origin", b"http://testserver")])
        comm.scope["user"] = alice  # as AuthMiddleware would set from the session
        ok, code = await comm.connect()
        await comm.disconnect()
        return ok, code

    assert async_to_sync(connect)(other_run.pk) == (False, 4404)
    assert async_to_sync(connect)(mine.pk)[0] is True


@pytest.mark.django_db(transaction=True)
def test_unknown_websocket_path_and_garbage_frames_do_not_error(team_user):
    from umbra_site.asgi import application

    team, alice = team_user
    mine = factories.run(factories.experiment(team, "mine"), config={}, state=Run.State.RUNNING, created_by=alice)

    async def scenario():
        comm = WebsocketCommunicator(application, "/ws/nope/", headers=[(b"origin", b"http://testserver")])
        comm.scope["user"] = alice
        refused = await comm.connect()
        comm2 = WebsocketCommunicator(application, f"/ws/runs/{mine.pk}/", headers=[(b"origin", b"http://testserver")])
        comm2.scope["user"] = alice
        ok, _ = await comm2.connect()
        await comm2.send_to(text_data="not json")
        await comm2.send_to(bytes_data=b"\x00\x01")
        alive = await comm2.receive_nothing(timeout=0.5)  # no error, no close
        await comm2.disconnect()
        return refused[0], ok, alive

    assert async_to_sync(scenario)() == (False, True, True)


@pytest.mark.django_db  # not transactional: the cancel's on-commit tasks would race the flush
def test_cancel_with_an_unreachable_cluster_is_recorded(team_user, settings):
    from runs.tasks import cancel_run

    settings.UMBRA_ALLOWED_CLUSTERS = ["http://127.0.0.1:1"]
    team, alice = team_user
    run = factories.run(factories.experiment(team, "c"), config={"cluster": "http://127.0.0.1:1"},
                        state=Run.State.DISPATCHING, created_by=alice)
    cancel_run(run.pk)  # the task body, run here against the real (unreachable) address
    run.refresh_from_db()
    assert run.state == Run.State.CANCELLED and "did not answer" in run.events.last().reason


def test_failure_reason_is_short_and_readable():
    from runs.dispatch import failure_reason

    log = "\x1b[36m(GRPOTrainer pid=1)\x1b[0m noise\nray.exceptions.OutOfMemoryError: Task was killed\nmore noise\n"
    reason = failure_reason("Job entrypoint command failed with exit code 1, last available logs (...): " + log, log)
    assert reason.splitlines()[0] == "Job entrypoint command failed with exit code 1"
    assert "OutOfMemoryError" in reason and "\x1b" not in reason
    traceback = ("Traceback (most recent call last):\n  File \"/w/umbra/job/parts.py\", line 66, in start_parts\n"
                 "    raise ValueError(why)  # before any engine starts\n"
                 "ValueError: trainer_ranks=8 needs 8 CPUs beside the 2 rollout instances' 1\n")
    reason = failure_reason("Job entrypoint command failed with exit code 1", traceback)
    assert reason.splitlines()[1:] == ["ValueError: trainer_ranks=8 needs 8 CPUs beside the 2 rollout instances' 1"]
    remote = "(GRPOTrainer pid=4242, ip=10.0.0.7) ValueError: bad shapes\nshutting down\n"  # a node's prefix
    assert failure_reason("failed", remote).splitlines()[1:] == ["(GRPOTrainer pid=4242, ip=10.0.0.7) ValueError: bad shapes"]
    # a reward's long printed line is cut, so the job's own last lines still fit
    loud = "RuntimeError: " + "Z" * 6000 + "\nKilled\n"
    assert failure_reason("failed", loud).splitlines()[-1] == "Killed"
    assert failure_reason("failed", "the hero is Killed by an OOM\nSystemExit: 3\n").splitlines()[1:] == ["SystemExit: 3"]
