"""Every error the API's schema declares, answered as declared: JSON bodies for unknown
paths, malformed ids and wrong methods; 400 for empty query values, a page that is no
page, a body that is no object, NUL and non-text in text fields; 404/409 for refused
membership changes and names taken; 415 for a body that is not JSON; the docs page."""
import re
import subprocess
import sys

import pytest
from django.test import Client
from rest_framework.test import APIClient

from telemetry.models import MetricPoint
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def api():
    team = factories.team("alpha")
    user = factories.member(team, "alice", role="admin")
    client = APIClient()
    client.force_authenticate(user)
    client.user, client.team = user, team
    return client


def _json_error(resp, status: int) -> dict:
    assert resp.status_code == status, resp.content[:300]
    assert resp["Content-Type"].startswith("application/json"), resp["Content-Type"]
    return resp.json()


@pytest.mark.parametrize("path", ["/api/runs/null,null/", "/api/runs/abc/events/", "/api/experiments/0.5/",
                                  "/api/teams/a%0Ab/members/",
                                  "/api/nope/", "/api/"])
def test_unknown_paths_and_malformed_ids_get_a_json_404(api, path):
    assert "detail" in _json_error(api.get(path), 404)


def test_a_post_to_an_unknown_path_is_a_json_404_not_a_csrf_page(fast_password_hashing):
    team = factories.team("alpha")
    factories.member(team, "alice", password="pw-alice-123")
    browser = Client(enforce_csrf_checks=True)
    browser.login(username="alice", password="pw-alice-123")
    _json_error(browser.post("/api/runs/null,null/cancel/"), 404)


def test_a_missing_slash_is_named(api):
    assert "/api/runs/" in _json_error(api.get("/api/runs"), 404)["detail"]


def test_a_method_the_endpoint_lacks_is_a_json_405_with_allow(api):
    resp = api.put("/api/runs/", {}, format="json")
    assert "detail" in _json_error(resp, 405) and "GET" in resp["Allow"]


@pytest.mark.parametrize("query", ["/api/runs/?page=", "/api/runs/?created_after=", "/api/experiments/?team=",
                                   "/api/runs/{run}/metrics/?max_points=", "/api/compare/?runs={run}&x="])
def test_empty_query_values_are_refused(api, query):
    run = factories.run(factories.experiment(api.team))
    name = re.search(r"[?&](\w+)=$", query).group(1)
    assert "must not be empty" in _json_error(api.get(query.format(run=run.pk)), 400)[name][0]


@pytest.mark.parametrize("page", ["0", "-1", "abc", "1.5", "last"])
def test_a_page_that_is_no_whole_number_from_1_is_a_400(api, page):
    assert "page" in _json_error(api.get(f"/api/runs/?page={page}"), 400)


def test_a_page_past_the_last_is_a_404(api):
    assert _json_error(api.get("/api/runs/?page=2"), 404) == {"detail": "Invalid page."}
    assert _json_error(api.get("/api/runs/?page=" + "9" * 40), 404) == {"detail": "Invalid page."}


@pytest.mark.parametrize("body", ["[]", '"tags"', "5", "null"])
def test_a_patch_body_that_is_no_object_is_a_400(api, body):
    exp = factories.experiment(api.team, description="kept")
    resp = api.generic("PATCH", f"/api/experiments/{exp.pk}/", body, content_type="application/json")
    _json_error(resp, 400)
    exp.refresh_from_db()
    assert exp.description == "kept"


@pytest.mark.parametrize("body", [{"team": "alpha", "name": "a\x00b"}, {"team": "alpha", "name": "ok\x1b[31m"},
                                  {"team": "alpha", "name": "ok", "description": "nul\x00"},
                                  {"team": "alpha", "name": "ok", "tags": [5]}, {"team": 5, "name": "ok"}])
def test_nul_control_characters_and_non_text_are_refused(api, body):
    errors = _json_error(api.post("/api/experiments/", body, format="json"), 400)
    assert set(errors) & {"name", "description", "tags", "team"}


def test_nul_in_a_query_is_refused(api):
    _json_error(api.get("/api/runs/?tag=a%00b"), 400)


def test_a_name_taken_is_a_409(api):
    factories.experiment(api.team, "taken")
    assert "already has" in _json_error(api.post("/api/experiments/", {"team": "alpha", "name": "taken"}, format="json"),
                                  409)["detail"]


def test_membership_refusals_are_404_and_409(api):
    assert _json_error(api.post("/api/teams/alpha/members/", {"username": "nobody"}, format="json"), 404) == {
        "detail": "no such user"}
    assert _json_error(api.delete("/api/teams/alpha/members/nobody/"), 404) == {"detail": "not a member of this team"}
    assert "admin" in _json_error(api.delete("/api/teams/alpha/members/alice/"), 409)["detail"]
    demote = api.post("/api/teams/alpha/members/", {"username": "alice", "role": "member"}, format="json")
    assert "admin" in _json_error(demote, 409)["detail"]
    assert _json_error(api.get("/api/teams/beta/members/"), 404) == {"detail": "no such team"}


def test_a_run_that_ended_cannot_be_cancelled_409(api):
    run = factories.run(factories.experiment(api.team), state="succeeded")
    assert "already ended" in _json_error(api.post(f"/api/runs/{run.pk}/cancel/"), 409)["detail"]


def test_a_reference_outside_the_compared_runs_is_a_404(api):
    run = factories.run(factories.experiment(api.team))
    assert "reference" in _json_error(api.get(f"/api/compare/?runs={run.pk}&reference={run.pk + 1}"), 404)["detail"]


@pytest.mark.parametrize("runs", ["0", "1,,2", "a", ",".join(["1"] * 51)])
def test_run_ids_outside_the_declared_pattern_are_a_400(api, runs):
    assert "runs" in _json_error(api.get(f"/api/compare/?runs={runs}"), 400)


def test_a_trace_iteration_outside_its_bounds_is_a_400(api):
    run = factories.run(factories.experiment(api.team))
    for bad in ("-1", "+1", "1_0", str(2**31)):
        assert "iteration" in _json_error(api.get(f"/api/runs/{run.pk}/trace.jsonl?iteration={bad}"), 400)


def test_a_body_that_is_not_json_is_a_415(api):
    resp = api.post("/api/experiments/", "team=alpha&name=x", content_type="application/x-www-form-urlencoded")
    assert "detail" in _json_error(resp, 415)


def test_unauthenticated_requests_get_a_json_401():
    assert "detail" in _json_error(APIClient().get("/api/runs/"), 401)


def test_the_schema_declares_these_errors():
    from drf_spectacular.generators import SchemaGenerator

    paths = SchemaGenerator().get_schema(request=None, public=True)["paths"]
    declared = {(path, method): set(op["responses"]) for path, ops in paths.items() for method, op in ops.items()}
    assert {"400", "401", "404"} <= declared[("/api/runs/", "get")]
    assert {"200", "201", "400", "401", "403", "404", "415", "429"} <= declared[("/api/runs/", "post")]
    assert {"401", "403", "404", "409"} <= declared[("/api/runs/{id}/cancel/", "post")]
    assert {"404", "409"} <= declared[("/api/teams/{slug}/members/{username}/", "delete")]
    assert {"404", "503"} <= declared[("/api/compare/", "get")]
    assert {"400", "429"} <= declared[("/api/auth/token/", "post")]
    ingest = paths["/api/runs/{id}/metrics/"]["post"]
    assert ingest["security"] == [{"ingestToken": []}] and set(ingest["responses"]) == {"200", "201", "400", "404"}
    dry_run = next(p for p in paths["/api/runs/"]["post"]["parameters"] if p["name"] == "dry_run")
    assert set(dry_run["schema"]["enum"]) == {"1", "true", "yes", "0", "false", "no"}


def test_the_docs_page_renders_with_no_outside_asset(api):
    page = Client().get("/api/docs/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "/api/schema/" in html
    assets = re.findall(r"""(?:src|href)=["']([^"']+)["']""", html)
    assert assets and all(a.startswith("/") and not a.startswith("//") for a in assets), assets
    for asset in assets:
        if asset.startswith("/static/"):
            assert Client().get(asset).status_code == 200, asset


def test_the_top_bar_links_the_api_docs(api, fast_password_hashing):
    factories.user("bob", password="pw-bob-12345")
    browser = Client()
    browser.login(username="bob", password="pw-bob-12345")
    assert 'href="/api/docs/"' in browser.get("/").content.decode()


def test_settings_refuse_a_sqlite_database():
    code = "import django; django.setup()"
    env = {"DATABASE_URL": "sqlite:///tmp/x.sqlite3", "DJANGO_SETTINGS_MODULE": "umbra_site.settings",
           "PYTHONPATH": ":".join(sys.path), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "ImproperlyConfigured: DATABASE_URL must be a PostgreSQL URL" in done.stderr


def test_delete_on_the_token_endpoint_revokes_only_the_token_it_signs_in_with(api):
    from rest_framework.authtoken.models import Token

    mine, other = Token.objects.create(user=api.user), Token.objects.create(user=factories.member(api.team, "bob"))
    assert "detail" in _json_error(APIClient().delete("/api/auth/token/"), 401)  # no token
    session = Client()
    session.force_login(api.user)
    assert "detail" in _json_error(session.delete("/api/auth/token/"), 401)  # a session cannot log out a token
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {mine.key}")
    assert client.delete("/api/auth/token/").status_code == 204
    assert not Token.objects.filter(key=mine.key).exists() and Token.objects.filter(key=other.key).exists()
    assert "detail" in _json_error(client.delete("/api/auth/token/"), 401)  # already revoked


def test_a_submission_with_keys_it_does_not_know_is_refused_and_nothing_is_stored(api):
    from runs.models import Run

    body = {"team": "alpha", "experiment": "e", "config": {"model": "tiny"}, "tags": ["x"]}
    assert _json_error(api.post("/api/runs/", body, format="json"), 400) == {"tags": ["unknown field"]}
    assert _json_error(api.post("/api/experiments/", {"team": "alpha", "name": "n", "bogus": 1}, format="json"),
                       400) == {"bogus": ["unknown field"]}
    assert not Run.objects.exists()
