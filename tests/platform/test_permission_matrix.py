"""Every page, API endpoint and WebSocket route for five callers: the run's owner (a team
admin), a teammate (member), a viewer, a member of another team, and anonymous.

Invisible runs answer 404 (never 403) and appear in no list; visible runs a caller may
not act on answer 403; anonymous callers go to the login page (pages) or get 401 (API).
"""
from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from runs.models import Experiment, Run
from teams.models import Membership
from telemetry.models import MetricPoint
from tests import factories

ROLES = ("owner", "teammate", "viewer", "other", "anon")
VALID_CONFIG = {"model": "tiny", "iterations": 1, "prompts_per_iteration": 2, "group_size": 2, "max_tokens": 8}


@pytest.fixture
def world():
    """Team Alpha (owner=admin, teammate=member, viewer=viewer) with one queued run and
    points; team Beta (other=member) with a run of its own."""
    alpha, beta = factories.team("alpha"), factories.team("beta")
    users = {name: factories.member(team, name, role=role)  # no password: hashing is slow, logins are forced
             for name, team, role in (("owner", alpha, "admin"), ("teammate", alpha, "member"),
                                      ("viewer", alpha, "viewer"), ("other", beta, "member"))}
    exp = factories.experiment(alpha, "alpha-exp", tags=["t1"])
    run = factories.run(exp, config={"rollout_policy": "seer", "model": "tiny", "iterations": 2},
                        created_by=users["owner"])
    MetricPoint.objects.bulk_create([MetricPoint(run=run, name="rollout/throughput_tok_s", step=i, value=10.0 + i)
                                     for i in range(5)])
    beta_run = factories.run(factories.experiment(beta, "beta-exp"), config={"rollout_policy": "static-group"},
                             created_by=users["other"])
    return {"users": users, "run": run, "exp": exp, "beta_run": beta_run}


def _client(world, role: str, api: bool):
    if api:
        client = APIClient()
        if role != "anon":
            token, _ = Token.objects.get_or_create(user=world["users"][role])
            client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
        return client
    from django.test import Client

    client = Client()
    if role != "anon":
        client.force_login(world["users"][role])
    return client


# (method, url template, body, expected status per role owner/teammate/viewer/other/anon)
PAGES = [
    ("get", "/teams/alpha/runs/", None, (200, 200, 200, 404, 302)),
    ("get", "/teams/alpha/runs/new/", None, (200, 200, 403, 404, 302)),
    ("get", "/teams/alpha/members/", None, (200, 200, 200, 404, 302)),
    ("post", "/teams/alpha/members/", {"username": "other", "role": "viewer"}, (302, 403, 403, 404, 302)),
    ("post", "/teams/alpha/experiments/{exp}/visibility/", {"visibility": "org"}, (302, 302, 403, 404, 302)),
    ("get", "/runs/{run}/", None, (200, 200, 200, 404, 302)),
    ("get", "/runs/{run}/series.json", None, (200, 200, 200, 404, 302)),
    ("post", "/runs/{run}/cancel/", None, (302, 302, 403, 404, 302)),
    ("post", "/runs/{run}/resume/", None, (302, 302, 403, 404, 302)),  # queued: nothing to resume
    ("get", "/compare/?runs={run}", None, (200, 200, 200, 200, 302)),
]
API = [
    ("get", "/api/me/", None, (200, 200, 200, 200, 401)),
    ("get", "/api/teams/", None, (200, 200, 200, 200, 401)),
    ("get", "/api/teams/alpha/members/", None, (200, 200, 200, 404, 401)),
    ("post", "/api/teams/alpha/members/", {"username": "other", "role": "viewer"}, (201, 403, 403, 404, 401)),
    ("delete", "/api/teams/alpha/members/viewer/", None, (204, 403, 403, 404, 401)),
    ("get", "/api/experiments/", None, (200, 200, 200, 200, 401)),
    ("post", "/api/experiments/", {"team": "alpha", "name": "new"}, (201, 201, 403, 404, 401)),
    ("get", "/api/experiments/{exp}/", None, (200, 200, 200, 404, 401)),
    ("patch", "/api/experiments/{exp}/", {"visibility": "org"}, (200, 200, 403, 404, 401)),
    ("get", "/api/runs/", None, (200, 200, 200, 200, 401)),
    ("post", "/api/runs/", {"team": "alpha", "experiment": "e", "config": VALID_CONFIG}, (201, 201, 403, 404, 401)),
    ("get", "/api/runs/{run}/", None, (200, 200, 200, 404, 401)),
    ("post", "/api/runs/{run}/cancel/", None, (202, 202, 403, 404, 401)),
    ("post", "/api/runs/{run}/resume/", None, (409, 409, 403, 404, 401)),  # queued: nothing to resume
    ("get", "/api/runs/{run}/events/", None, (200, 200, 200, 404, 401)),
    ("get", "/api/runs/{run}/logs/", None, (200, 200, 200, 404, 401)),
    ("get", "/api/runs/{run}/metrics/", None, (200, 200, 200, 404, 401)),
    ("get", "/api/compare/?runs={run}", None, (200, 200, 200, 404, 401)),
    ("get", "/api/compare/summary.csv?runs={run}", None, (200, 200, 200, 404, 401)),
    ("get", "/api/compare/series.csv?runs={run}", None, (200, 200, 200, 404, 401)),
    ("get", "/api/schema/", None, (200, 200, 200, 200, 200)),  # the schema is public
]


def _cases(table, api):
    return [pytest.param(method, url, body, role, expected[i], api, id=f"{method} {url} {role}")
            for method, url, body, expected in table for i, role in enumerate(ROLES)]


@pytest.mark.django_db
@pytest.mark.parametrize("method,url,body,role,expected,api", _cases(PAGES, False) + _cases(API, True))
def test_route(world, method, url, body, role, expected, api):
    client = _client(world, role, api)
    path = url.format(run=world["run"].pk, exp=world["exp"].pk)
    kwargs = {"format": "json"} if api and body is not None else {}
    resp = getattr(client, method)(path, body, **kwargs) if body is not None else getattr(client, method)(path)
    assert resp.status_code == expected, resp.content[:300]
    if expected == 302 and role == "anon":
        assert "/accounts/login/" in resp["Location"]


@pytest.mark.django_db
@pytest.mark.parametrize("role", ROLES[:4])
def test_lists_hold_exactly_the_visible_runs(world, role):
    client = _client(world, role, api=True)
    ids = {r["id"] for r in client.get("/api/runs/").json()["results"]}
    exps = {e["name"] for e in client.get("/api/experiments/").json()["results"]}
    if role == "other":
        assert ids == {world["beta_run"].pk} and exps == {"beta-exp"}
    else:
        assert ids == {world["run"].pk} and exps == {"alpha-exp"}
    page = _client(world, role, api=False).get("/compare/").content.decode()
    assert (f'id="pick-{world["run"].pk}"' in page) is (role != "other")
    assert (f'id="pick-{world["beta_run"].pk}"' in page) is (role == "other")


@pytest.mark.django_db
def test_org_wide_experiment_is_readable_by_other_teams_but_not_actionable(world):
    Experiment.objects.filter(pk=world["exp"].pk).update(visibility=Experiment.Visibility.ORG)
    other = _client(world, "other", api=True)
    run = world["run"].pk
    assert other.get(f"/api/runs/{run}/").status_code == 200
    assert other.get(f"/api/compare/?runs={run},{world['beta_run'].pk}").status_code == 200
    assert other.post(f"/api/runs/{run}/cancel/").status_code == 403
    assert other.patch(f"/api/experiments/{world['exp'].pk}/", {"visibility": "team"}, format="json").status_code == 403
    assert other.post("/api/runs/", {"team": "alpha", "experiment": "x", "config": VALID_CONFIG},
                      format="json").status_code == 404
    assert Run.objects.get(pk=run).state == Run.State.QUEUED
    page = _client(world, "other", api=False).get(f"/runs/{run}/")
    assert page.status_code == 200 and b'id="cancel"' not in page.content


@pytest.mark.django_db
@pytest.mark.parametrize("role", ROLES)
def test_ingestion_is_write_only_by_token(world, role):
    from runs.ingest_tokens import issue_ingest_token

    run = world["run"]
    Run.objects.filter(pk=run.pk).update(state=Run.State.RUNNING)
    token = issue_ingest_token(run)
    client = _client(world, role, api=True)
    batch = {"seq": 1, "points": [{"name": "x", "step": 0, "value": 1.0}]}
    assert client.post(f"/api/runs/{run.pk}/metrics/", batch, format="json").status_code == 404
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    assert client.post(f"/api/runs/{run.pk}/metrics/", batch, format="json").status_code == 201


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("role,org,accepted", [(r, False, r in ("owner", "teammate", "viewer")) for r in ROLES]
                         + [("other", True, True), ("anon", True, False)])
def test_websocket(world, role, org, accepted):
    from django.contrib.auth.models import AnonymousUser

    from umbra_site.asgi import application

    if org:
        Experiment.objects.filter(pk=world["exp"].pk).update(visibility=Experiment.Visibility.ORG)
    user = AnonymousUser() if role == "anon" else world["users"][role]

    async def connect():
        comm = WebsocketCommunicator(application, f"/ws/runs/{world['run'].pk}/",
                                     headers=[(b"origin", b"http://testserver")])
        comm.scope["user"] = user
        ok, code = await comm.connect()
        await comm.disconnect()
        return ok, code

    ok, code = async_to_sync(connect)()
    assert ok is accepted and (accepted or code == 4404)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("revoke", ["membership", "visibility", "logout"])
def test_websocket_is_dropped_when_access_ends(world, revoke):
    """An open dashboard socket stops receiving a run's data once its user may no longer
    see the run (within RECHECK_S): removed from the team, the experiment made team-only,
    or logged out."""
    import asyncio
    from importlib import import_module

    from django.conf import settings
    from django.test import Client

    from telemetry.access_checks import RECHECK_S
    from telemetry.broadcast import broadcast
    from umbra_site.asgi import application

    if revoke == "visibility":  # another team's member reads it while it is organization-wide
        Experiment.objects.filter(pk=world["exp"].pk).update(visibility=Experiment.Visibility.ORG)
    user = world["users"]["other" if revoke == "visibility" else "viewer"]
    client = Client()
    client.force_login(user)
    session = import_module(settings.SESSION_ENGINE).SessionStore(session_key=client.session.session_key)
    run_id = world["run"].pk

    async def scenario():
        comm = WebsocketCommunicator(application, f"/ws/runs/{run_id}/", headers=[(b"origin", b"http://testserver")])
        comm.scope["user"], comm.scope["session"] = user, session
        ok, _ = await comm.connect()
        await sync(broadcast)(run_id, {"type": "metrics", "points": [{"name": "x", "step": 0, "value": 1.0}]})
        first = await comm.receive_json_from(timeout=5)
        if revoke == "membership":
            await sync(Membership.objects.filter(user=user).delete)()
        elif revoke == "visibility":
            await sync(Experiment.objects.filter(pk=world["exp"].pk).update)(visibility=Experiment.Visibility.TEAM)
        else:
            await sync(client.logout)()
        await asyncio.sleep(RECHECK_S)  # access is re-checked this often, not per message
        await sync(broadcast)(run_id, {"type": "metrics", "points": [{"name": "x", "step": 1, "value": 2.0}]})
        closed = await comm.receive_output(timeout=5)
        await comm.disconnect()
        return ok, first["points"][0]["step"], closed

    from asgiref.sync import sync_to_async as sync

    ok, step, closed = async_to_sync(scenario)()
    assert ok and step == 0
    assert closed == {"type": "websocket.close", "code": 4404}
