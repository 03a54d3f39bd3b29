"""The run's model download (``runs.model_export``): the run page's tar stream, the API's and
``umbra export``, against Django's live server on PostgreSQL and a checkpoint folder laid out
by the job's own ``CheckpointDir``. Another team gets 404 even for an organization-wide run."""
import io
import tarfile

import pytest
from rest_framework.authtoken.models import Token

from tests import factories
from umbra import cli
from umbra.client import credentials
from umbra.job.checkpoint import CheckpointDir, LoopState

pytestmark = pytest.mark.django_db(transaction=True)
FILES = {"config.json": b'{"model_type": "llama"}', "tokenizer.json": b"{}" * 300,
         "model.safetensors": bytes(range(256)) * 5000}  # not a multiple of 512: padding


@pytest.fixture
def setup(settings, tmp_path):
    settings.UMBRA_CHECKPOINT_DIR = str(tmp_path / "ckpt")
    alpha, beta = factories.team("alpha"), factories.team("beta")
    alice, bob = factories.member(alpha, "alice"), factories.member(beta, "bob")
    run = factories.run(factories.experiment(alpha, visibility="org"), state="succeeded")
    root = CheckpointDir(tmp_path / "ckpt" / f"run-{run.pk}")
    folder = root.begin(4)
    (folder / "hf").mkdir()
    for name, data in FILES.items():
        (folder / "hf" / name).write_bytes(data)
    root.commit(folder, LoopState(4, 5, []))
    return run, alice, bob


def _members(body: bytes) -> dict:
    with tarfile.open(fileobj=io.BytesIO(body), mode="r:") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar if m.isfile()}


def test_team_member_downloads_the_latest_model_as_a_streamed_tar(client, setup):
    run, alice, _ = setup
    client.force_login(alice)
    page = client.get(f"/runs/{run.pk}/")
    assert b'id="download-model"' in page.content and b"it-000004" in page.content
    resp = client.get(f"/runs/{run.pk}/model.tar")
    assert resp.status_code == 200 and resp.streaming and resp["Content-Type"] == "application/x-tar"
    assert f"umbra-run-{run.pk}-it-000004.tar" in resp["Content-Disposition"]
    prefix = f"umbra-run-{run.pk}-it-000004/"
    assert _members(b"".join(resp.streaming_content)) == {prefix + k: v for k, v in FILES.items()}


def test_another_team_gets_404_even_for_an_org_wide_run(client, setup):
    run, _, bob = setup
    client.force_login(bob)
    page = client.get(f"/runs/{run.pk}/")
    assert page.status_code == 200 and b'id="download-model"' not in page.content  # visible, not downloadable
    assert client.get(f"/runs/{run.pk}/model.tar").status_code == 404
    token = Token.objects.create(user=bob)
    resp = client.get(f"/api/runs/{run.pk}/model.tar", HTTP_AUTHORIZATION=f"Token {token.key}")
    assert resp.status_code == 404


def test_anonymous_is_sent_to_login(client, setup):
    run, _, _ = setup
    resp = client.get(f"/runs/{run.pk}/model.tar")
    assert resp.status_code == 302 and "login" in resp["Location"]


def test_a_run_without_a_model_checkpoint_is_a_clear_404(client, setup):
    _, alice, _ = setup
    bare = factories.run(factories.experiment(alice.memberships.first().team, name="other"))
    token = Token.objects.create(user=alice)
    resp = client.get(f"/api/runs/{bare.pk}/model.tar", HTTP_AUTHORIZATION=f"Token {token.key}")
    assert resp.status_code == 404 and "no checkpoint with a model" in resp.json()["detail"]


def _login(live_server, user, tmp_path, monkeypatch):
    monkeypatch.setenv("UMBRA_CONFIG_DIR", str(tmp_path / f"cfg-{user.username}"))
    monkeypatch.delenv("UMBRA_URL", raising=False)
    monkeypatch.delenv("UMBRA_TOKEN", raising=False)
    credentials.save(live_server.url, Token.objects.create(user=user).key)


def test_cli_export_writes_the_model_folder(live_server, setup, tmp_path, monkeypatch, capsys):
    run, alice, bob = setup
    _login(live_server, alice, tmp_path, monkeypatch)
    out = tmp_path / "model"
    assert cli.main(["export", str(run.pk), str(out)]) == 0
    assert {p.name: p.read_bytes() for p in out.iterdir()} == FILES
    capsys.readouterr()
    assert cli.main(["export", str(run.pk), str(out)]) == 2  # not empty: nothing overwritten
    assert "not an empty folder" in capsys.readouterr().err
    _login(live_server, bob, tmp_path, monkeypatch)
    assert cli.main(["export", str(run.pk), str(tmp_path / "bob")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("umbra: ") and "Traceback" not in err and "not found" in err
    assert not (tmp_path / "bob").exists()
