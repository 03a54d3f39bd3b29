"""Security claims of the README's "Security notes", each proved here: hashed passwords,
session/CSRF cookies and CSRF on every form, production settings, scoped and expiring
ingestion tokens, and no secret in logs, job entrypoints or anything shown to users."""
from __future__ import annotations

import hashlib
import http.server
import logging
import os
import re
import secrets
import socket
import subprocess
import sys
import threading
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth.hashers import identify_hasher
from django.core.management import call_command
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from django.utils import timezone
from rest_framework.authentication import SessionAuthentication, TokenAuthentication

from runs.models import Run
from runs.ingest_tokens import issue_ingest_token
from teams.models import Membership
from telemetry.models import MetricBatch
from tests import factories
from umbra.config import RunConfig

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]
SAFE_HASHERS = {"pbkdf2_sha256", "argon2", "scrypt", "bcrypt_sha256"}
BATCH = {"seq": 1, "points": [{"name": "rollout/time_s", "step": 0, "value": 1.5}]}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ingest(client, run_id: int, token: str):
    return client.post(f"/api/runs/{run_id}/metrics/", BATCH, content_type="application/json",
                       HTTP_AUTHORIZATION=f"Bearer {token}")


def _live_run(team, user, name="live") -> Run:
    return factories.run(factories.experiment(team, name), state=Run.State.RUNNING, created_by=user)


# --- ingestion tokens: scoped to one run, expiring ------------------------------------------

def test_token_of_one_run_cannot_post_to_another(client, team_user):
    team, user = team_user
    run_a, run_b = _live_run(team, user, "a"), _live_run(team, user, "b")
    token_a, token_b = issue_ingest_token(run_a), issue_ingest_token(run_b)
    resp = _ingest(client, run_b.pk, token_a)
    assert resp.status_code == 404 and "invalid or expired" in resp.json()["detail"]
    assert not MetricBatch.objects.filter(run=run_b).exists()
    assert _ingest(client, run_b.pk, token_b).status_code == 201
    assert _ingest(client, run_a.pk, token_a).status_code == 201


def test_token_expires_after_its_ttl(client, running_run, settings):
    run, token = running_run
    settings.UMBRA_INGEST_TOKEN_TTL_S = 90
    token = issue_ingest_token(run)
    run.refresh_from_db()
    assert abs((run.ingest_token_expires_at - timezone.now()) - timedelta(seconds=90)) < timedelta(seconds=10)
    Run.objects.filter(pk=run.pk).update(ingest_token_expires_at=timezone.now() - timedelta(seconds=1))
    resp = _ingest(client, run.pk, token)
    assert resp.status_code == 404
    assert resp.json()["detail"] == "no such run, or the ingestion token is invalid or expired"
    Run.objects.filter(pk=run.pk).update(ingest_token_expires_at=timezone.now() + timedelta(seconds=30))
    assert _ingest(client, run.pk, token).status_code == 201
    # less than half its lifetime was left: the accepted batch renewed it (a live run never lapses)
    run.refresh_from_db()
    assert run.ingest_token_expires_at - timezone.now() > timedelta(seconds=80)


def test_reissued_token_replaces_the_old_one_and_only_a_hash_is_stored(client, running_run):
    run, old = running_run
    new = issue_ingest_token(run)
    run.refresh_from_db()
    assert run.ingest_token_hash == hashlib.sha256(new.encode()).hexdigest() and new not in run.ingest_token_hash
    assert _ingest(client, run.pk, old).status_code == 404
    assert _ingest(client, run.pk, new).status_code == 201


# --- passwords: hashed by Django on every path that creates users ---------------------------

def _assert_hashed(user, password: str) -> None:
    user.refresh_from_db()
    assert password not in user.password
    assert identify_hasher(user.password).algorithm in SAFE_HASHERS
    assert user.check_password(password)


def test_password_hashed_by_create_user(django_user_model):
    _assert_hashed(django_user_model.objects.create_user("u1", password="pw-create-user-1"), "pw-create-user-1")


def test_password_hashed_by_demo_command(django_user_model):
    from runs.management.commands.umbra_demo import DEMO_PASSWORD

    call_command("umbra_demo", "--model", "tiny", "--iterations", "1", stdout=open(os.devnull, "w"))
    _assert_hashed(django_user_model.objects.get(username="demo"), DEMO_PASSWORD)


def test_password_hashed_by_createsuperuser(django_user_model, monkeypatch):
    monkeypatch.setenv("DJANGO_SUPERUSER_PASSWORD", "pw-superuser-1")
    call_command("createsuperuser", interactive=False, username="root", email="r@example.org",
                 stdout=open(os.devnull, "w"))
    _assert_hashed(django_user_model.objects.get(username="root"), "pw-superuser-1")


def test_password_hashed_by_admin_add_user(django_user_model):
    admin = django_user_model.objects.create_superuser("boss", password="pw-boss-12345")
    client = Client()
    client.force_login(admin)
    resp = client.post("/admin/auth/user/add/", {"username": "newbie", "password1": "pw-newbie-12345",
                                                  "password2": "pw-newbie-12345", "usable_password": "true"})
    assert resp.status_code == 302, resp.content[:500]
    _assert_hashed(django_user_model.objects.get(username="newbie"), "pw-newbie-12345")


def test_no_signup_route_creates_users():
    names = {name for name in get_resolver().reverse_dict if isinstance(name, str)}
    assert not {n for n in names if re.search(r"sign.?up|register", n)}


# --- sessions and CSRF ----------------------------------------------------------------------

def test_session_cookie_is_httponly_and_samesite(team_user):
    client = Client(enforce_csrf_checks=True)
    client.get("/accounts/login/")
    resp = client.post("/accounts/login/", {"username": "alice", "password": "pw-alpha-123",
                                            "csrfmiddlewaretoken": client.cookies["csrftoken"].value})
    assert resp.status_code == 302
    session = resp.cookies["sessionid"]
    assert session["httponly"] and session["samesite"] == "Lax"
    assert resp.wsgi_request.session.session_key  # a server-side session, not a signed cookie


@pytest.fixture
def csrf_client(team_user):
    """A logged-in admin of team 'alpha' whose client enforces CSRF, with one queued run."""
    team, user = team_user
    Membership.objects.filter(user=user).update(role=Membership.Role.ADMIN)
    run = factories.run(factories.experiment(team), created_by=user)
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    client.get("/teams/alpha/runs/new/")  # sets the csrftoken cookie
    return client, run


def _forms(run: Run) -> list[tuple[str, dict]]:
    """Every HTML form that POSTs (templates with {% csrf_token %}), with valid-enough data."""
    return [
        ("/teams/alpha/runs/new/", {"experiment": "e", "model": "tiny", "iterations": "1"}),
        (f"/runs/{run.pk}/cancel/", {}),
        (f"/teams/alpha/experiments/{run.experiment_id}/visibility/", {"visibility": "org"}),
        ("/teams/alpha/members/", {"username": "alice", "role": "admin"}),
        ("/teams/alpha/whatif/", {"source": "preset"}),
        ("/accounts/logout/", {}),
    ]


@pytest.mark.parametrize("index", range(6))
def test_every_html_form_refuses_a_post_without_csrf_token(csrf_client, index):
    client, run = csrf_client
    url, data = _forms(run)[index]
    assert client.post(url, data).status_code == 403
    # The same post with the token passes CSRF: the 403 above was CSRF's, not a permission's.
    resp = client.post(url, {**data, "csrfmiddlewaretoken": client.cookies["csrftoken"].value})
    assert resp.status_code != 403, (url, resp.status_code)


@pytest.mark.parametrize("url", ["/accounts/login/", "/admin/login/"])
def test_login_forms_refuse_a_post_without_csrf_token(team_user, url):
    client = Client(enforce_csrf_checks=True)
    client.get(url)
    creds = {"username": "alice", "password": "pw-alpha-123"}
    assert client.post(url, creds).status_code == 403
    assert client.post(url, {**creds, "csrfmiddlewaretoken": client.cookies["csrftoken"].value}).status_code != 403


def test_api_with_session_cookie_needs_csrf(csrf_client):
    client, _ = csrf_client
    body = {"team": "alpha", "experiment": "e", "config": {"model": "tiny"}}
    resp = client.post("/api/runs/", body, content_type="application/json")
    assert resp.status_code == 403 and "CSRF" in resp.json()["detail"]
    resp = client.post("/api/runs/", body, content_type="application/json",
                       HTTP_X_CSRFTOKEN=client.cookies["csrftoken"].value)
    assert resp.status_code == 201


def _patterns(resolver: URLResolver, prefix: str = ""):
    for p in resolver.url_patterns:
        if isinstance(p, URLResolver):
            yield from _patterns(p, prefix + str(p.pattern))
        elif isinstance(p, URLPattern):
            yield prefix + str(p.pattern), p.callback


def test_only_api_views_skip_the_csrf_middleware_and_they_check_csrf_on_sessions(settings):
    assert "django.middleware.csrf.CsrfViewMiddleware" in settings.MIDDLEWARE
    exempt = [(route, cb) for route, cb in _patterns(get_resolver()) if getattr(cb, "csrf_exempt", False)]
    assert exempt, "the API views are expected here"
    for route, callback in exempt:
        view = getattr(callback, "cls", None)
        assert view is not None and route.startswith("api/"), f"{route} skips CSRF outside the REST API"
        # Token auth carries no cookie; session auth is DRF's, which enforces CSRF itself.
        for auth in view.authentication_classes:
            assert auth in (TokenAuthentication, SessionAuthentication), (route, auth)


# --- production settings --------------------------------------------------------------------

def _settings_in_subprocess(code: str, **env) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SECRET_KEY", "DJANGO_DEBUG")}
    full.update(env)
    return subprocess.run([sys.executable, "-c", f"import django; django.setup(); from django.conf import settings as s; {code}"],
                          env=full, capture_output=True, text=True, timeout=120, cwd=ROOT)


def test_production_refuses_to_start_without_secret_key():
    done = _settings_in_subprocess("print(s.SECRET_KEY)", DJANGO_DEBUG="0")
    assert done.returncode != 0 and "DJANGO_SECRET_KEY must be set" in done.stderr


def test_production_sends_cookies_over_https_only():
    key = secrets.token_urlsafe(50)
    done = _settings_in_subprocess(
        "print(s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.SESSION_COOKIE_HTTPONLY, s.SECURE_HSTS_SECONDS)",
        DJANGO_DEBUG="0", DJANGO_SECRET_KEY=key, DJANGO_HSTS_SECONDS="3600")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["True", "True", "True", "3600"]
    check = subprocess.run([sys.executable, "manage.py", "check", "--deploy"], capture_output=True, text=True,
                           timeout=120, cwd=ROOT, env={**os.environ, "DJANGO_DEBUG": "0", "DJANGO_SECRET_KEY": key})
    assert "security.W012" not in check.stderr + check.stdout  # SESSION_COOKIE_SECURE
    assert "security.W016" not in check.stderr + check.stdout  # CSRF_COOKIE_SECURE
    assert "security.W009" not in check.stderr + check.stdout  # weak SECRET_KEY


def test_token_lifetime_must_be_positive():
    done = _settings_in_subprocess("print(s.UMBRA_INGEST_TOKEN_TTL_S)", UMBRA_INGEST_TOKEN_TTL_S="0")
    assert done.returncode != 0 and "UMBRA_INGEST_TOKEN_TTL_S must be a positive" in done.stderr


# --- no secret in what users see -----------------------------------------------------------

def test_run_config_schema_cannot_carry_a_secret():
    secret_words = {"token", "secret", "password", "passwd", "credential", "credentials", "auth", "key", "apikey"}
    assert not [f for f in RunConfig.model_fields if secret_words & set(f.lower().split("_"))]
    # Free text could carry anything: only these take it, each checked (known model or folder,
    # known data set or a file under the data folders, a built-in reward or a file under
    # UMBRA_REWARD_DIRS, Ray address without credentials).
    assert {f for f, info in RunConfig.model_fields.items() if info.annotation is str} == {
        "model", "dataset", "val_dataset", "reward", "cluster"}
    with pytest.raises(ValueError, match="Extra inputs are not permitted"):
        RunConfig(model="tiny", ingest_token="x")


@pytest.mark.parametrize("cluster", ["http://admin:hunter2@head:8265", "ray://u:p@head:10001", "tok@head:6379"])
def test_cluster_with_credentials_is_refused(team_user, settings, cluster):
    settings.UMBRA_ALLOWED_CLUSTERS = [cluster]  # even an operator-listed address
    team, user = team_user
    client = Client()
    client.force_login(user)
    resp = client.post("/teams/alpha/runs/new/", {"experiment": "e", "model": "tiny", "cluster": cluster})
    assert resp.status_code == 400 and "must not contain credentials" in resp.content.decode()
    resp = client.post("/api/runs/", {"team": "alpha", "experiment": "e", "config": {"model": "tiny", "cluster": cluster}},
                       content_type="application/json")
    assert resp.status_code == 400 and "must not contain credentials" in str(resp.json())
    assert not Run.objects.exists()


def test_cluster_error_masks_credentials_of_the_ray_address(settings):
    from runs import ray_jobs

    settings.RAY_ADDRESS = f"http://operator:s3cret-pw@127.0.0.1:{_free_port()}"  # nothing listens there
    with pytest.raises(ray_jobs.ClusterUnavailable) as caught:
        ray_jobs.client_for({})
    assert "s3cret-pw" not in str(caught.value) and "***@127.0.0.1" in str(caught.value)
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


def test_pages_api_and_exports_never_show_a_token_or_secret(team_user, settings):
    team, user = team_user
    runs = [_live_run(team, user, "a"), _live_run(team, user, "b")]
    tokens = [issue_ingest_token(r) for r in runs]
    Run.objects.filter(pk=runs[0].pk).update(log_tail="iteration 0 done", config={"model": "tiny", "seed": 1})
    runs[0].refresh_from_db()
    hidden = [*tokens, *(r.ingest_token_hash for r in Run.objects.all()), settings.SECRET_KEY]
    ids = ",".join(str(r.pk) for r in runs)
    client = Client()
    client.force_login(user)
    urls = [f"/runs/{runs[0].pk}/", f"/runs/{runs[0].pk}/series.json", "/teams/alpha/runs/", "/api/runs/",
            f"/api/runs/{runs[0].pk}/", f"/api/runs/{runs[0].pk}/logs/", f"/api/runs/{runs[0].pk}/events/",
            f"/api/compare/?runs={ids}", f"/api/compare/summary.csv?runs={ids}",
            f"/api/compare/series.csv?runs={ids}&metrics=rollout/time_s", f"/compare/?runs={ids}"]
    for url in urls:
        resp = client.get(url)
        assert resp.status_code == 200, url
        body = resp.content.decode()
        assert not [s for s in hidden if s in body], url
        assert "ingest_token" not in body, url
    detail = client.get(f"/api/runs/{runs[0].pk}/").json()
    assert set(detail["config"]) <= set(RunConfig.model_fields)
    diff = client.get(f"/api/compare/?runs={ids}").json()["config_diff"]
    assert set(diff["keys"]) <= set(RunConfig.model_fields) and "seed" in diff["keys"]


# --- no secret in logs or the job's entrypoint ----------------------------------------------

class _Refuser(http.server.BaseHTTPRequestHandler):
    """Answers 503 twice, then 404 (what the platform says to a bad token)."""

    calls = 0

    def do_POST(self):  # noqa: N802  (http.server's name)
        type(self).calls += 1
        self.send_response(503 if type(self).calls <= 2 else 404)
        self.end_headers()
        self.wfile.write(b'{"detail": "no such run, or the ingestion token is invalid or expired"}')

    def log_message(self, *args):
        pass


def test_telemetry_client_never_logs_its_token(caplog, monkeypatch):
    from umbra.telemetry import client as telemetry_client

    monkeypatch.setattr(telemetry_client.time, "sleep", lambda s: None)  # no back-off waits in a test
    token = "tok-" + "z" * 40
    caplog.set_level(logging.DEBUG)
    dead = telemetry_client.TelemetryClient(f"http://127.0.0.1:{_free_port()}", "7", token, timeout_s=2, retries=2)
    assert dead.send(0, {"x": 1.0}) is False
    assert "(attempt 2)" in caplog.text  # the connection error was logged, per attempt
    server = http.server.HTTPServer(("127.0.0.1", 0), _Refuser)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        refused = telemetry_client.TelemetryClient(f"http://127.0.0.1:{server.server_port}", "7", token, retries=3)
        with pytest.raises(RuntimeError) as caught:
            refused.send(0, {"x": 1.0})
    finally:
        server.shutdown()
    assert "HTTP 503" in caplog.text and "404" in str(caught.value)
    assert token not in caplog.text and token not in str(caught.value)

