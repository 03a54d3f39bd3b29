"""The team's runs table: latest numbers, progress, filters, search, sort, 50 a page,
the title, labels (page, API), and live rows over the team's WebSocket."""
import json
import re

import pytest
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator

from runs.models import Run
from tests import factories
from umbra.telemetry.wire import BatchIn

pytestmark = pytest.mark.django_db


def _points(run, name, values):
    from telemetry.models import MetricPoint

    MetricPoint.objects.bulk_create([MetricPoint(run=run, name=name, step=i, value=v) for i, v in enumerate(values)])


def _rows(html: str) -> list[int]:
    return [int(m) for m in re.findall(r'<tr data-run="(\d+)"', html)]


@pytest.fixture
def table(client, team_user):
    team, alice = team_user
    bob = factories.member(team, "bob")
    exp = factories.experiment(team, "gsm", tags=["math"])
    seer = factories.run(exp, {"model": "tiny", "rollout_policy": "seer", "iterations": 4}, state=Run.State.RUNNING,
                         created_by=alice, name="seer-fast", tags=["ab"])
    verl = factories.run(exp, {"model": "tiny", "rollout_policy": "verl", "iterations": 4},
                         state=Run.State.SUCCEEDED, created_by=bob)
    _points(seer, "rollout/throughput_tok_s", [100.0, 300.0])
    _points(seer, "iteration/time_s", [10.0, 30.0])
    _points(verl, "rollout/throughput_tok_s", [200.0])
    client.force_login(alice)
    return client, seer, verl


def test_title_is_the_team_not_the_experiments_table(table):
    client, _, _ = table
    html = client.get("/teams/alpha/runs/").content.decode()
    title = re.search(r"<title>(.*?)</title>", html, re.S).group(1)
    assert title == "Alpha runs · Umbra"


def test_latest_numbers_progress_and_owner(table):
    client, seer, verl = table
    html = client.get("/teams/alpha/runs/").content.decode()
    start = html.index(f'<tr data-run="{seer.pk}"')
    row = html[start:html.index("</tr>", start)]
    assert 'data-cell="throughput">300.0<' in row  # the latest, not the first or the median
    assert '<span data-cell="done">2</span> of 4' in row and "ETA 40s" in row  # 2 left x mean 20 s
    assert 'aria-valuenow="50"' in row and "alice" in row and ">ab<" in row and ">math<" in row


def test_filters_and_search(table):
    client, seer, verl = table
    get = lambda q: _rows(client.get(f"/teams/alpha/runs/?{q}").content.decode())  # noqa: E731
    assert get("state=running") == [seer.pk]
    assert get("policy=verl") == [verl.pk]
    assert get("tag=ab") == [seer.pk] and sorted(get("tag=math")) == sorted([seer.pk, verl.pk])
    assert get("owner=bob") == [verl.pk]
    assert get("q=fast") == [seer.pk] and get(f"q=%23{verl.pk}") == [verl.pk] and get("q=nothing") == []


def test_sort_by_a_number_and_by_name(table):
    client, seer, verl = table
    get = lambda q: _rows(client.get(f"/teams/alpha/runs/?{q}").content.decode())  # noqa: E731
    assert get("sort=-throughput") == [seer.pk, verl.pk]
    assert get("sort=throughput") == [verl.pk, seer.pk]
    assert get("sort=-created") == [verl.pk, seer.pk]


def test_a_bad_parameter_is_a_message_not_an_error(table):
    client, _, _ = table
    resp = client.get("/teams/alpha/runs/?state=bogus&sort=nope")
    html = resp.content.decode()
    assert resp.status_code == 200 and "state: &#x27;bogus&#x27; is not one of" in html and "sort: &#x27;nope&#x27;" in html


def test_fifty_a_page_beyond_the_old_200_cap(client, team_user, django_assert_max_num_queries):
    team, alice = team_user
    exp = factories.experiment(team, "many")
    Run.objects.bulk_create([Run(experiment=exp, config={"model": "tiny", "iterations": 3}, created_by=alice)
                             for _ in range(230)])
    client.force_login(alice)
    with django_assert_max_num_queries(20):  # the numbers are annotations: no query per run
        first = client.get("/teams/alpha/runs/").content.decode()
    assert len(_rows(first)) == 50 and "1–50 of 230" in first and 'rel="next"' in first
    last = client.get("/teams/alpha/runs/?page=5").content.decode()
    assert len(_rows(last)) == 30 and "201–230 of 230" in last and 'rel="next"' not in last


def test_labels_by_api_page_and_their_errors(table):
    from rest_framework.test import APIClient

    client, seer, _ = table
    api = APIClient()
    api.force_authenticate(seer.created_by)
    resp = api.patch(f"/api/runs/{seer.pk}/", {"name": " renamed ", "tags": ["x", "x", "y"], "note": "why"},
                     format="json")
    assert resp.status_code == 200, resp.content
    assert resp.json()["name"] == "renamed" and resp.json()["tags"] == ["x", "y", "math"] and resp.json()["note"] == "why"
    bad = api.patch(f"/api/runs/{seer.pk}/", {"tags": ["no spaces"]}, format="json")
    assert bad.status_code == 400 and "letters, digits and _ . : + - (no spaces)" in json.dumps(bad.json()["tags"])
    assert api.patch(f"/api/runs/{seer.pk}/", {"state": "succeeded"}, format="json").status_code == 400
    viewer = factories.member(seer.experiment.team, "val", role="viewer")
    api.force_authenticate(viewer)
    assert api.patch(f"/api/runs/{seer.pk}/", {"name": "x"}, format="json").status_code == 403

    resp = client.post(f"/runs/{seer.pk}/labels/", {"name": "page-name", "tags": "a, b c", "note": ""})
    assert resp.status_code == 302
    seer.refresh_from_db()
    assert (seer.name, seer.tags, seer.note) == ("page-name", ["a", "b", "c"], "")
    client.post(f"/runs/{seer.pk}/labels/", {"name": "n", "tags": "bad/tag!", "note": ""}, follow=True)
    seer.refresh_from_db()
    assert seer.tags == ["a", "b", "c"]  # refused with a message, nothing stored
    client.post(f"/runs/{seer.pk}/labels/", {"tags": "d"})
    seer.refresh_from_db()
    assert (seer.name, seer.tags) == ("page-name", ["d"])  # a field not posted keeps its value


def test_row_update_of_a_batch():
    from telemetry.services import run_row_update

    batch = BatchIn.model_validate_json(json.dumps({"seq": 1, "points": [
        {"name": "rollout/throughput_tok_s", "step": 0, "value": 1.0},
        {"name": "rollout/throughput_tok_s", "step": 2, "value": 3.0},
        {"name": "iteration/time_s", "step": 2, "value": 9.0}, {"name": "train/loss", "step": 2, "value": 0.1}]}))
    msg = run_row_update(7, batch.points)
    assert msg.values == {"rollout/throughput_tok_s": 3.0} and msg.iterations_done == 3
    assert run_row_update(7, batch.points[3:]) is None


@pytest.mark.django_db(transaction=True)
def test_team_socket_gets_states_and_numbers_members_only(team_user, running_run):
    from runs.lifecycle import transition
    from telemetry.services import ingest
    from umbra_site.asgi import application

    team, alice = team_user
    run, _ = running_run
    outsider = factories.member(factories.team("beta"), "eve")

    async def connect(user):
        comm = WebsocketCommunicator(application, "/ws/teams/alpha/runs/", headers=[(b"origin", b"http://testserver")])
        comm.scope["user"] = user
        ok, code = await comm.connect()
        return comm, ok, code

    async def scenario():
        _, ok, code = await connect(outsider)
        assert (ok, code) == (False, 4404)
        comm, ok, _ = await connect(alice)
        assert ok
        from channels.db import database_sync_to_async

        await database_sync_to_async(ingest)(run, BatchIn.model_validate_json(json.dumps(
            {"seq": 1, "points": [{"name": "rollout/tail_time_s", "step": 0, "value": 4.5}]})))
        first = json.loads(await comm.receive_from(timeout=5))
        await database_sync_to_async(transition)(run.pk, Run.State.SUCCEEDED, "done")
        second = json.loads(await comm.receive_from(timeout=5))
        await comm.disconnect()
        return first, second

    first, second = async_to_sync(scenario)()
    assert first == {"type": "run_row", "run": run.pk, "state": None, "values": {"rollout/tail_time_s": 4.5},
                     "iterations_done": None}
    assert second["state"] == "succeeded" and second["run"] == run.pk


def test_api_search_and_tag_filter_see_run_labels(table):
    from rest_framework.test import APIClient

    _, seer, verl = table
    api = APIClient()
    api.force_authenticate(seer.created_by)
    ids = lambda q: [r["id"] for r in api.get(f"/api/runs/?{q}").json()["results"]]  # noqa: E731
    assert ids("search=fast") == [seer.pk] and ids("tag=ab") == [seer.pk] and sorted(ids("tag=math")) == sorted(
        [seer.pk, verl.pk])
