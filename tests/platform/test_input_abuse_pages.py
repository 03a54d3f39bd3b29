"""Hostile input to the launcher, labels and model download (ours): each is a field error, a
400 or a 404 with a message, never a 500, and nothing of another file leaks. Django's test
client on PostgreSQL; the checkpoint laid out by the job's own ``CheckpointDir``."""
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.authtoken.models import Token

from runs.models import Run
from tests import factories
from umbra.job.checkpoint import CheckpointDir, LoopState

pytestmark = pytest.mark.django_db
GOOD = {"experiment": "exp", "model": "tiny", "dataset": "arith", "prompts_per_iteration": "4", "group_size": "4",
        "max_tokens": "32", "iterations": "2", "rollout_instances": "2", "rollout_policy": "static-group"}


def _new(client, team, **changes):
    return client.post(f"/teams/{team.slug}/runs/new/", {**GOOD, **changes})


def test_labels_with_nul_from_the_run_page_are_a_message_not_a_500(client, team_user):
    team, alice = team_user
    run = factories.run(factories.experiment(team), created_by=alice, state="succeeded")
    client.force_login(alice)
    for body in ({"name": "a\x00b"}, {"note": "x\x00"}, {"tags": "a\x00"}):
        resp = client.post(f"/runs/{run.pk}/labels/", body, follow=True)
        assert resp.status_code == 200 and "Labels not saved" in resp.content.decode()
    run.refresh_from_db()
    assert (run.name, run.note, run.tags) == ("", "", [])
    client.post(f"/runs/{run.pk}/labels/", {"name": "ok", "note": "two\nlines\ttab"})
    run.refresh_from_db()
    assert (run.name, run.note) == ("ok", "two\nlines\ttab")


def test_run_names_with_terminal_escapes_are_refused_by_the_api_and_the_run_page(client, team_user):
    from rest_framework.test import APIClient

    team, alice = team_user
    run = factories.run(factories.experiment(team), created_by=alice, state="succeeded", name="before")
    api = APIClient()
    api.force_authenticate(alice)
    for name in ("\x1b[31mred", "two\nlines", "bell\x07", "rtl\u202eoverride"):
        resp = api.patch(f"/api/runs/{run.pk}/", {"name": name}, format="json")
        assert resp.status_code == 400 and resp.json() == {"name": ["must not contain control characters"]}, name
    client.force_login(alice)
    resp = client.post(f"/runs/{run.pk}/labels/", {"name": "\x1b[31mred", "note": "", "tags": ""}, follow=True)
    assert "Labels not saved: name: must not contain control characters" in resp.content.decode()
    run.refresh_from_db()
    assert run.name == "before"
    assert api.patch(f"/api/runs/{run.pk}/", {"name": "red, renamed"}, format="json").status_code == 200


@pytest.mark.parametrize("text, message", [
    ("group_size: " + "9" * 5000, "YAML could not be read"),  # int() of 5,000 digits: ValueError, not YAMLError
    ("model: " + "[" * 5000 + "]" * 5000, "YAML could not be read"),
    ("group_size: 4\ngroup_size: 1\n", "'group_size' is given twice"),
])
def test_yaml_that_pyyaml_cannot_turn_into_a_mapping_is_a_field_error(client, team_user, text, message):
    team, alice = team_user
    client.force_login(alice)
    resp = _new(client, team, config_yaml=text)
    assert resp.status_code == 400 and message in " ".join(resp.context["form"].errors["config_yaml"])
    assert not Run.objects.exists()


def test_an_oversized_yaml_file_is_refused_without_reading_it_all(client, team_user):
    team, alice = team_user
    client.force_login(alice)
    resp = _new(client, team, config_file=SimpleUploadedFile("c.yaml", b"model: tiny\n" * 200_000))
    assert resp.status_code == 400 and "longer than 65,536 bytes" in resp.context["form"].errors["config_file"][0]


def test_an_upload_nested_past_pyarrows_stack_is_a_field_error(client, team_user):
    team, alice = team_user
    client.force_login(alice)
    deep = b'{"prompt": "p", "x": ' + b"[" * 20000 + b"]" * 20000 + b"}\n"
    resp = _new(client, team, dataset_file=SimpleUploadedFile("deep.jsonl", deep))
    assert resp.status_code == 400 and "too deeply nested" in resp.context["form"].errors["dataset_file"][0]


@pytest.fixture
def checkpoint(settings, tmp_path, team_user):
    settings.UMBRA_CHECKPOINT_DIR = str(tmp_path / "ckpt")
    team, alice = team_user
    run = factories.run(factories.experiment(team), created_by=alice, state="succeeded")
    root = CheckpointDir(tmp_path / "ckpt" / f"run-{run.pk}")
    folder = root.begin(1)
    (folder / "hf").mkdir()
    (folder / "hf" / "config.json").write_text("{}")
    root.commit(folder, LoopState(1, 2, []))
    return run, alice, tmp_path / "ckpt" / f"run-{run.pk}", folder / "hf"


def test_a_symlink_in_the_model_folder_is_left_out_of_the_download(client, checkpoint, tmp_path):
    run, alice, _, hf = checkpoint
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET")
    (hf / "leak.txt").symlink_to(secret)  # the job runs members' reward code: it could plant one
    (hf / "sub").symlink_to(tmp_path, target_is_directory=True)
    client.force_login(alice)
    resp = client.get(f"/runs/{run.pk}/model.tar")
    body = b"".join(resp.streaming_content)
    assert resp.status_code == 200 and b"config.json" in body and b"TOPSECRET" not in body and b"leak.txt" not in body


@pytest.mark.parametrize("latest", ["..", "."])
def test_a_latest_pointer_out_of_the_run_folder_gives_404(client, checkpoint, latest):
    run, alice, root, _ = checkpoint
    (root.parent / "hf").mkdir(exist_ok=True)
    (root.parent / "hf" / "config.json").write_text("{}")  # what ".." would reach
    (root / "hf").mkdir(exist_ok=True)
    (root / "hf" / "config.json").write_text("{}")
    (root / "latest").write_text(latest)
    client.force_login(alice)
    assert client.get(f"/runs/{run.pk}/model.tar").status_code == 404


@pytest.mark.django_db(transaction=True)
def test_cli_export_into_a_folder_it_cannot_make_is_one_line(live_server, checkpoint, tmp_path, monkeypatch, capsys):
    from umbra import cli
    from umbra.client import credentials

    run, alice, _, _ = checkpoint
    monkeypatch.setenv("UMBRA_CONFIG_DIR", str(tmp_path / "cfg"))
    monkeypatch.delenv("UMBRA_URL", raising=False)
    monkeypatch.delenv("UMBRA_TOKEN", raising=False)
    credentials.save(live_server.url, Token.objects.create(user=alice).key)
    (tmp_path / "a-file").write_text("x")
    assert cli.main(["export", str(run.pk), str(tmp_path / "a-file" / "model")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("umbra: cannot write the model into") and "unexpected" not in err and len(err.splitlines()) == 1


def test_a_small_parquet_of_millions_of_rows_is_refused_before_they_are_read(client, team_user, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    team, alice = team_user
    path = tmp_path / "many.parquet"  # 2 M rows in a few KB: as Python rows, about a GB of the web process
    pq.write_table(pa.table({"prompt": pa.array(["p"]).take(pa.array([0] * 2_000_000))}), path, compression="zstd")
    assert path.stat().st_size < 100_000
    client.force_login(alice)
    resp = _new(client, team, dataset_file=SimpleUploadedFile("many.parquet", path.read_bytes()))
    assert resp.status_code == 400 and "2,000,000 rows; at most 100,000" in resp.context["form"].errors["dataset_file"][0]
