"""The run form: field errors for bad values, nothing stored; a valid form stores a queued run."""
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from runs.models import Run
from tests import factories

pytestmark = pytest.mark.django_db

GOOD = {"experiment": "exp", "model": "tiny", "dataset": "arith", "prompts_per_iteration": "4", "group_size": "4",
        "max_tokens": "32", "iterations": "2", "rollout_instances": "2", "rollout_policy": "static-group"}


def _post(client, team, **changes):
    return client.post(f"/teams/{team.slug}/runs/new/", {**GOOD, **changes})


@pytest.mark.parametrize("field,value,msg", [
    ("group_size", "1", "greater than or equal to 2"),
    ("max_tokens", "5000", "exceeds what model"),
    ("dataset", "/no/such.jsonl", "or a path under"),
    ("dataset", "/etc/passwd", "or a path under"),
    ("temperature", "hot", "valid number"),
    ("prompts_per_iteration", "abc", "valid integer"),
    ("model", "not-a-model", "or a path under"),
    ("model", "/etc", "or a path under"),
])
def test_invalid_field_gets_field_error_and_stores_nothing(client, team_user, field, value, msg):
    team, user = team_user
    client.force_login(user)
    resp = _post(client, team, **{field: value})
    assert resp.status_code == 400
    errors = resp.context["form"].errors
    assert field in errors and msg in " ".join(errors[field])
    assert Run.objects.count() == 0


def test_bad_upload_is_refused(client, team_user):
    team, user = team_user
    client.force_login(user)
    bad = SimpleUploadedFile("d.jsonl", b'{"question": "q", "answer": "no marker"}\n')
    resp = client.post(f"/teams/{team.slug}/runs/new/", {**GOOD, "dataset_file": bad})
    assert resp.status_code == 400
    assert "####" in " ".join(resp.context["form"].errors["dataset_file"])
    assert Run.objects.count() == 0


def test_valid_form_with_upload_stores_a_queued_run(client, team_user):
    team, user = team_user
    client.force_login(user)
    data = (json.dumps({"question": "1+1?", "answer": "#### 2"}) + "\n").encode()
    resp = client.post(f"/teams/{team.slug}/runs/new/",
                       {**GOOD, "dataset_file": SimpleUploadedFile("d.jsonl", data)})
    assert resp.status_code == 302
    run = Run.objects.get()
    assert run.state == "queued" and run.config["group_size"] == 4
    assert run.config["dataset"].endswith(".jsonl") and run.events.get().to_state == "queued"


def test_an_upload_too_small_to_hold_out_from_is_a_field_error(client, team_user):
    team, user = team_user
    client.force_login(user)
    data = (json.dumps({"question": "1+1?", "answer": "#### 2"}) + "\n").encode()
    resp = client.post(f"/teams/{team.slug}/runs/new/", {**GOOD, "dataset_file": SimpleUploadedFile("d.jsonl", data),
                                                        "val_fraction": "0.5", "val_every": "1"})
    assert resp.status_code == 400
    assert "at least 2 problems in the data set, it has 1" in " ".join(resp.context["form"].errors["val_fraction"])
    assert Run.objects.count() == 0


def test_viewer_cannot_submit(client, team_user):
    team, _ = team_user
    viewer = factories.member(team, "vic", role="viewer")
    client.force_login(viewer)
    assert _post(client, team).status_code == 403
    assert Run.objects.count() == 0


@pytest.mark.parametrize("field,value,msg", [
    ("model", "x" * 300, "unknown model"),
    ("dataset", "é" * 300, "unknown dataset"),
    ("cluster", "http://169.254.169.254/", "not an allowed Ray cluster"),
])
def test_hostile_values_get_field_errors(client, team_user, field, value, msg):
    team, user = team_user
    client.force_login(user)
    resp = _post(client, team, **{field: value})
    assert resp.status_code == 400 and msg in " ".join(resp.context["form"].errors[field])
    assert Run.objects.count() == 0


def test_rejected_form_writes_no_upload(client, team_user, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    team, user = team_user
    client.force_login(user)
    data = (json.dumps({"question": "1+1?", "answer": "#### 2"}) + "\n").encode()
    resp = client.post(f"/teams/{team.slug}/runs/new/",
                       {**GOOD, "model": "nope", "dataset_file": SimpleUploadedFile("d.jsonl", data)})
    assert resp.status_code == 400
    assert not (tmp_path / "datasets").exists() or not any((tmp_path / "datasets").iterdir())


def test_config_bounds_requests_per_iteration(client, team_user):
    team, user = team_user
    client.force_login(user)
    resp = _post(client, team, prompts_per_iteration="4096", group_size="64")
    assert resp.status_code == 400 and "at most" in " ".join(resp.context["form"].errors["group_size"])
