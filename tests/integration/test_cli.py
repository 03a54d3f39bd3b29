"""The `umbra` client against the real platform: daphne on the PostgreSQL test database.

Each command runs in-process (``umbra.cli.main``) with its own config folder, as a user
would run it; what it changed is checked through the ORM. Submitted runs stay queued
(no Celery worker here) until cancelled.
"""
import json
import stat
import threading
import time

import pytest
import requests

from umbra import cli

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture
def umbra(tmp_path, monkeypatch, capsys):
    """Run ``umbra ARGS...``; returns ``(exit code, stdout, stderr)``."""
    monkeypatch.setenv("UMBRA_CONFIG_DIR", str(tmp_path / "umbra-config"))
    monkeypatch.delenv("UMBRA_URL", raising=False)
    monkeypatch.delenv("UMBRA_TOKEN", raising=False)

    def call(*argv):
        capsys.readouterr()
        code = cli.main([str(a) for a in argv])
        out = capsys.readouterr()
        assert "Traceback" not in out.err
        return code, out.out, out.err

    return call


@pytest.fixture
def alice(live_web, team_user, umbra):
    """``umbra`` logged in as alice (member of team alpha)."""
    code, _, err = umbra("login", "--url", live_web, "--username", "alice", "--password", "pw-alpha-123")
    assert code == 0, err
    return umbra


def _yaml(tmp_path, text: str):
    path = tmp_path / "run.yaml"
    path.write_text(text)
    return path


def _run(team, name: str, user, policy: str = "static-group", state: str = "succeeded"):
    from runs.models import Experiment, Run
    from umbra.config import RunConfig

    exp, _ = Experiment.objects.get_or_create(team=team, name=name)
    config = RunConfig(model="tiny", rollout_policy=policy, iterations=3).model_dump()
    return Run.objects.create(experiment=exp, config=config, state=state, created_by=user)


def _points(run, name: str, values):
    from telemetry.models import MetricPoint

    MetricPoint.objects.bulk_create([MetricPoint(run=run, name=name, step=i, value=v) for i, v in enumerate(values)])


def _one_line(err: str) -> str:
    assert err.startswith("umbra: ") and err.count("\n") == 1, err
    return err


def test_login_stores_a_private_working_token(live_web, team_user, umbra, tmp_path):
    code, out, err = umbra("login", "--url", live_web + "/", "--username", "alice", "--password", "pw-alpha-123")
    assert code == 0, err
    assert "alice" in out and "alpha (member)" in out
    path = tmp_path / "umbra-config" / "credentials.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    stored = json.loads(path.read_text())
    assert stored["url"] == live_web
    me = requests.get(f"{live_web}/api/me/", headers={"Authorization": f"Token {stored['token']}"}, timeout=10)
    assert me.status_code == 200 and me.json()["username"] == "alice"


def test_login_reads_a_piped_password_from_stdin(live_web, team_user, umbra, monkeypatch, capsys):
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO("pw-alpha-123\n"))
    code, out, err = umbra("login", "--url", live_web, "--username", "alice")
    assert code == 0 and "alice" in out, err
    assert "echoed" not in err  # getpass's warning when it cannot turn echo off


def test_bad_password_and_unreachable_server_are_clear_errors(live_web, team_user, umbra, tmp_path):
    code, _, err = umbra("login", "--url", live_web, "--username", "alice", "--password", "wrong")
    assert code == 2 and _one_line(err).startswith("umbra: login failed: ")
    assert "credentials" in err.lower()  # the server's non_field_errors message
    assert not (tmp_path / "umbra-config" / "credentials.json").exists()

    code, _, err = umbra("login", "--url", "http://127.0.0.1:9", "--username", "alice", "--password", "x")
    assert code == 1 and "cannot reach http://127.0.0.1:9" in _one_line(err)

    code, _, err = umbra("runs")
    assert code == 1 and "umbra login" in _one_line(err)


def test_a_bad_field_is_named_and_nothing_is_stored(alice, tmp_path):
    from runs.models import Run

    # refused by the local check
    code, _, err = alice("submit", _yaml(tmp_path, "team: alpha\nexperiment: e\nmodel: tiny\ngroup_size: 1\n"))
    assert code == 2 and err == "umbra: group_size: Input should be greater than or equal to 2\n"
    # a path is judged by the server: its 400 names the field the same way
    code, _, err = alice("submit", _yaml(tmp_path, "model: /no/such/model\n"), "--team", "alpha",
                         "--experiment", "e")
    assert code == 2 and _one_line(err).startswith("umbra: model: unknown model '/no/such/model'")
    assert Run.objects.count() == 0


def test_submit_lists_and_cancels_a_run(alice, live_web, tmp_path):
    from runs.models import Run

    # no team: alice's only team; the flag wins over the file's experiment
    path = _yaml(tmp_path, "experiment: from-file\nmodel: tiny\nrollout_policy: seer\niterations: 2\n")
    code, out, err = alice("submit", path, "--experiment", "cli-exp")
    assert code == 0, err
    run = Run.objects.select_related("experiment__team").get()
    assert f"Submitted run {run.pk}" in out and f"{live_web}/runs/{run.pk}/" in out
    assert (run.experiment.team.slug, run.experiment.name, run.state) == ("alpha", "cli-exp", "queued")
    assert run.config["rollout_policy"] == "seer" and run.config["iterations"] == 2
    assert run.config["group_size"] == 8  # a default filled in

    code, out, err = alice("runs", "--team", "alpha", "--policy", "seer")
    assert code == 0, err
    row = next(line for line in out.splitlines() if line.strip().startswith(str(run.pk)))
    for cell in ("alpha", "cli-exp", "queued", "seer", "tiny", "0/2"):
        assert cell in row, (cell, row)
    code, out, _ = alice("runs", "--state", "succeeded")
    assert code == 0 and "No runs." in out

    code, out, err = alice("cancel", run.pk)
    assert code == 0, err
    assert f"Run {run.pk} cancelled." in out
    run.refresh_from_db()
    assert run.state == "cancelled"
    code, _, err = alice("cancel", run.pk)
    assert code == 1 and _one_line(err).startswith(f"umbra: run {run.pk}: ") and "already ended" in err


def test_compare_prints_ratios_to_the_reference_and_the_config_diff(alice, team_user):
    team, user = team_user
    base, seer = _run(team, "cmp", user, "static-group"), _run(team, "cmp", user, "seer")
    for run, throughput, tail, reward in ((base, [200.0, 230.0, 240.0], 12.0, [0.1, 0.25]),
                                          (seer, [230.0, 253.0, 264.0], 6.0, [0.2, 0.5])):
        _points(run, "rollout/throughput_tok_s", throughput)
        _points(run, "rollout/tail_time_s", [tail] * 3)
        _points(run, "reward/mean", reward)
        _points(run, "iteration/time_s", [1.0, 1.0, 1.0])

    code, out, err = alice("compare", seer.pk, base.pk, "--metrics", "reward/mean")
    assert code == 0, err
    lines = out.splitlines()
    ref = next(line for line in lines if f"#{base.pk}" in line and "(ref)" in line)  # default reference
    assert "230.0 (1.00x)" in ref and "12.00 (1.00x)" in ref and "3 (1.00x)" in ref
    row = next(line for line in lines if f"#{seer.pk}" in line and "(1.10x)" in line)
    assert "253.0 (1.10x)" in row and "6.00 (0.50x)" in row and "0.500 (2.00x)" in row
    assert "final values" in out and "reward/mean" in out
    diff = next(line for line in lines if line.strip().startswith("rollout_policy"))
    assert "static-group" in diff and "seer" in diff

    code, out, err = alice("compare", base.pk, seer.pk, "--reference", seer.pk)
    assert code == 0, err
    row = next(line for line in out.splitlines() if f"#{base.pk}" in line and "(0.50x)" in line)
    assert "12.00 (2.00x)" in row


def test_follow_exits_0_on_success_and_1_with_the_reason_of_a_failure(alice, team_user):
    from django.db import connection

    from runs.services import transition

    team, user = team_user
    run = _run(team, "follow", user, state="running")
    _points(run, "rollout/throughput_tok_s", [120.0])

    def finish():
        time.sleep(1.0)
        _points(run, "reward/mean", [0.5])
        transition(run.pk, "succeeded", "job finished")
        connection.close()

    worker = threading.Thread(target=finish)
    worker.start()
    code, out, err = alice("follow", run.pk, "--interval", "0.2")
    worker.join()
    assert code == 0, err
    assert f"Run {run.pk} succeeded." in out and "throughput 120.0 tok/s" in out

    failed = _run(team, "follow", user, state="running")
    transition(failed.pk, "failed", "Ray job umbra-run-x exploded")
    code, _, err = alice("follow", failed.pk, "--interval", "0.2")
    assert code == 1 and err == f"umbra: run {failed.pk} failed: Ray job umbra-run-x exploded\n"


def test_another_teams_run_is_not_found(alice, team_user, django_user_model):
    from runs.models import Run
    from teams.models import Membership, Team

    beta = Team.objects.create(name="Beta", slug="beta")
    bob = django_user_model.objects.create_user("bob", password="pw-beta-123")
    Membership.objects.create(user=bob, team=beta, role=Membership.Role.MEMBER)
    secret = _run(beta, "secret-exp", bob, state="running")
    mine = _run(team_user[0], "mine", team_user[1])

    for argv in (("cancel", secret.pk), ("follow", secret.pk), ("compare", mine.pk, secret.pk)):
        code, _, err = alice(*argv)
        assert code == 1 and _one_line(err) == f"umbra: no run {secret.pk} (or not visible to you)\n", (argv, err)
    assert Run.objects.get(pk=secret.pk).state == "running"
    code, out, _ = alice("runs")
    assert code == 0 and "secret-exp" not in out and "mine" in out
