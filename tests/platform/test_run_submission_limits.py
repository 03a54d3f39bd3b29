"""Submission limits (runs.limits) and the validate-only submit: refusals are a 429 with a
message from the API and a form error on the web form, and store nothing; a dry run
stores nothing and sends no task."""
from datetime import timedelta
from unittest import mock

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from runs import queue
from runs.models import Experiment, Run
from tests import factories

pytestmark = pytest.mark.django_db
BODY = {"team": "alpha", "experiment": "limits", "config": {"model": "tiny", "iterations": 2}}


@pytest.fixture
def api():
    team = factories.team("alpha")
    client = APIClient()
    client.user, client.team = factories.member(team, "alice"), team
    client.force_authenticate(client.user)
    return client


def test_a_teams_full_queue_refuses_submissions_with_429(api, settings):
    settings.UMBRA_TEAM_MAX_QUEUED = 2
    assert [api.post("/api/runs/", BODY, format="json").status_code for _ in range(2)] == [201, 201]
    resp = api.post("/api/runs/", BODY, format="json")
    assert resp.status_code == 429 and Run.objects.count() == 2
    assert "has 2 runs waiting in the queue; the limit is 2" in resp.json()["detail"]
    Run.objects.filter(pk=Run.objects.first().pk).update(state="running")  # one started: a place is free
    assert api.post("/api/runs/", BODY, format="json").status_code == 201


def test_a_users_submission_rate_is_limited_with_retry_after(api, settings):
    settings.UMBRA_USER_MAX_SUBMISSIONS, settings.UMBRA_USER_SUBMISSION_WINDOW_S = 3, 600
    for _ in range(3):
        assert api.post("/api/runs/", BODY, format="json").status_code == 201
    resp = api.post("/api/runs/", BODY, format="json")
    assert resp.status_code == 429 and Run.objects.count() == 3
    assert resp.json()["detail"].startswith("you have submitted 3 runs in the last 10 min")
    assert 0 < int(resp["Retry-After"]) <= 600
    Run.objects.update(created_at=timezone.now() - timedelta(seconds=601))  # the window has passed
    assert api.post("/api/runs/", BODY, format="json").status_code == 201


def test_the_web_form_shows_the_refusal(client, team_user, settings):
    settings.UMBRA_TEAM_MAX_QUEUED = 1
    team, user = team_user
    client.force_login(user)
    form = {"experiment": "limits", "model": "tiny", "iterations": "2"}
    assert client.post(f"/teams/{team.slug}/runs/new/", form).status_code == 302
    resp = client.post(f"/teams/{team.slug}/runs/new/", form)
    assert resp.status_code == 429 and Run.objects.count() == 1
    errors = resp.context["form"].non_field_errors()
    assert errors and "has 1 run waiting" in errors[0]
    assert resp.content.decode().count("has 1 run waiting") == 1  # shown once, above the fields


def test_dry_run_answers_the_contract_and_stores_nothing(api, django_capture_on_commit_callbacks):
    before = (Experiment.objects.count(), Run.objects.count())
    with mock.patch("runs.tasks.pump_queue.delay") as pumped, django_capture_on_commit_callbacks() as callbacks:
        resp = api.post("/api/runs/?dry_run=1", {**BODY, "experiment": " new-one ",
                                                  "config": {"model": "tiny", "group_size": 4}}, format="json")
    assert resp.status_code == 200, resp.content
    body = resp.json()
    assert body == {"dry_run": True, "config": body["config"], "team": "alpha", "experiment": "new-one",
                    "queue_position": 1}
    assert body["config"]["group_size"] == 4 and body["config"]["rollout_policy"] == "static-group"  # defaults filled in
    assert (Experiment.objects.count(), Run.objects.count()) == before
    assert not callbacks and not pumped.called


def test_dry_run_gives_the_place_the_run_would_take(api):
    factories.run(factories.experiment(factories.team("beta"), "b"))  # beta waits already
    factories.run(factories.experiment(api.team, "a"))  # alpha too
    assert api.post("/api/runs/?dry_run=true", BODY, format="json").json()["queue_position"] == 3
    assert queue.positions().keys() == set(Run.objects.values_list("pk", flat=True))


def test_dry_run_checks_what_a_submission_checks(api, settings):
    assert api.post("/api/runs/?dry_run=1", {**BODY, "config": {"group_size": 1}}, format="json").status_code == 400
    for bad in ("maybe", "%20", "TRUE", "1&dry_run=0"):  # never stored because of a typo
        assert api.post(f"/api/runs/?dry_run={bad}", BODY, format="json").json() == {
            "dry_run": ["give it once, as one of 1, true, yes, 0, false, no"]}, bad
    for unknown in ("dryrun", "DRY_RUN"):
        assert api.post(f"/api/runs/?{unknown}=1", BODY, format="json").json() == {
            unknown: ["unknown query parameter: a submission takes only dry_run"]}
    assert not Run.objects.exists()
    assert api.post("/api/runs/?dry_run=0", BODY, format="json").status_code == 201
    settings.UMBRA_TEAM_MAX_QUEUED = 1
    resp = api.post("/api/runs/?dry_run=1", BODY, format="json")
    assert resp.status_code == 429 and "waiting in the queue" in resp.json()["detail"]
    assert Run.objects.count() == 1


def test_a_resume_past_the_teams_queue_limit_is_refused_and_changes_nothing(api, settings):
    settings.UMBRA_TEAM_MAX_QUEUED = 1
    failed = factories.run(factories.experiment(api.team), state="failed", created_by=api.user)
    api.post("/api/runs/", BODY, format="json")  # the one place in the queue
    resp = api.post(f"/api/runs/{failed.pk}/resume/")
    assert resp.status_code == 429 and "waiting in the queue" in resp.json()["detail"]
    failed.refresh_from_db()
    assert failed.state == "failed" and failed.attempt == 0
