"""The `umbra` commands against the real API: Django's live server on the PostgreSQL test
database (no daphne, Celery or Ray). Each command runs in-process (``umbra.cli.main``) with
its own config folder, as a user would run it; ``follow`` into a file runs as a real
process with its stdout redirected to that file."""
import datetime as dt
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from django.db import connection
from django.utils import timezone
from rest_framework.authtoken.models import Token

from runs.models import Run
from telemetry.models import MetricPoint
from tests import factories
from umbra import cli
from umbra.client import credentials

pytestmark = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def alice(live_server, tmp_path, monkeypatch):
    """Alice, a member of team alpha, logged in (stored URL and token) to the live server."""
    monkeypatch.setenv("UMBRA_CONFIG_DIR", str(tmp_path / "umbra-config"))
    monkeypatch.delenv("UMBRA_URL", raising=False)
    monkeypatch.delenv("UMBRA_TOKEN", raising=False)
    team = factories.team("alpha")
    user = factories.member(team, "alice")
    token = Token.objects.create(user=user)
    credentials.save(live_server.url, token.key)
    return team, user, token.key


@pytest.fixture
def umbra(alice, capsys):
    """Run ``umbra ARGS...``; returns ``(exit code, stdout, stderr)``."""

    def call(*argv):
        capsys.readouterr()
        code = cli.main([str(a) for a in argv])
        out = capsys.readouterr()
        assert "Traceback" not in out.err
        return code, out.out, out.err

    return call


def _one_line(err: str) -> str:
    assert err.startswith("umbra: ") and err.count("\n") == 1, err
    return err


def _run(team, user, state: str = "succeeded", iterations: int = 3, policy: str = "seer", **fields) -> Run:
    from umbra.config import RunConfig

    config = RunConfig(model="tiny", rollout_policy=policy, iterations=iterations).model_dump()
    return factories.run(factories.experiment(team, "cli"), config=config, state=state, created_by=user, **fields)


def _points(run, name: str, values, first_step: int = 0, walls=None):
    MetricPoint.objects.bulk_create([MetricPoint(run=run, name=name, step=first_step + i, value=v)
                                     for i, v in enumerate(values)])
    for i, wall in enumerate(walls or []):  # wall_time is set on insert (auto_now_add): back-date it
        MetricPoint.objects.filter(run=run, name=name, step=first_step + i).update(wall_time=wall)


def test_follow_into_a_file_writes_one_plain_line_per_iteration(alice, live_server, tmp_path):
    team, user, _ = alice
    t0 = timezone.now() - dt.timedelta(hours=1)
    run = _run(team, user, started_at=t0, finished_at=t0 + dt.timedelta(seconds=70))
    _points(run, "iteration/time_s", [10.0, 20.0, 30.0],
            walls=[t0 + dt.timedelta(seconds=s) for s in (12, 33, 64)])
    _points(run, "rollout/throughput_tok_s", [200.0, 230.0, 240.0])
    _points(run, "reward/mean", [0.1, 0.25, 0.5])

    out_path = tmp_path / "follow.log"
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'platform'}:{ROOT / 'workers'}", "FORCE_COLOR": "1",
           "UMBRA_DEBUG": "1"}
    with open(out_path, "w") as out:  # FORCE_COLOR (set by many CI systems) must not bring the bar back
        proc = subprocess.run([sys.executable, "-m", "umbra.cli", "follow", str(run.pk), "--interval", "0.2"],
                              stdout=out, stderr=subprocess.PIPE, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    text = out_path.read_text()
    assert "\r" not in text and "\x1b" not in text, repr(text)
    lines = text.splitlines()
    # elapsed counts from the run's start (an hour before follow began) to each iteration's point;
    # the ETA is the iterations left times the mean iteration time so far
    assert lines[0] == f"run {run.pk}  iteration 1/3  elapsed 0:00:12  eta 0:00:20  " \
                       "throughput 200.0 tok/s  reward 0.100"
    assert lines[1] == f"run {run.pk}  iteration 2/3  elapsed 0:00:33  eta 0:00:15  " \
                       "throughput 230.0 tok/s  reward 0.250"
    assert lines[2] == f"run {run.pk}  iteration 3/3  elapsed 0:01:04  throughput 240.0 tok/s  reward 0.500"
    assert lines[3] == f"run {run.pk}  succeeded  iteration 3/3  elapsed 0:01:10  " \
                       "throughput 240.0 tok/s  reward 0.500"
    assert lines[4:] == [f"Run {run.pk} succeeded."]


def test_follow_prints_each_iteration_once_while_the_run_goes_on(alice, umbra):
    from runs.services import transition

    team, user, _ = alice
    run = _run(team, user, state="running", started_at=timezone.now() - dt.timedelta(seconds=5))
    _points(run, "iteration/time_s", [1.0])

    def go_on():
        try:
            for step in (1, 2):
                time.sleep(0.7)
                _points(run, "iteration/time_s", [1.0], first_step=step)
            transition(run.pk, "succeeded", "job finished")
        finally:
            connection.close()

    worker = threading.Thread(target=go_on)
    worker.start()
    code, out, err = umbra("follow", run.pk, "--interval", "0.2")
    worker.join()
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith(f"run {run.pk}  running  iteration ")
    iterations = [line.split("  ")[1] for line in lines if line.startswith(f"run {run.pk}  iteration ")]
    assert iterations == ["iteration 1/3", "iteration 2/3", "iteration 3/3"], out
    assert f"run {run.pk}  succeeded  iteration 3/3" in out and lines[-1] == f"Run {run.pk} succeeded."


def test_every_read_command_prints_one_json_document(alice, umbra):
    team, user, _ = alice
    done = _run(team, user, started_at=timezone.now() - dt.timedelta(minutes=2), finished_at=timezone.now(),
                log_tail="step 1\nstep 2\n")
    _points(done, "iteration/time_s", [1.0, 1.0, 1.0])
    _points(done, "reward/mean", [0.1, 0.2, 0.4])
    other = _run(team, user, policy="static-group")
    _points(other, "iteration/time_s", [1.0, 1.0])

    def doc(*argv):
        code, out, err = umbra(*argv, "--json")
        assert code == 0 and err == "", (argv, err)
        return json.loads(out)  # the whole of stdout: one document

    listed = doc("runs")
    assert listed["count"] == 2 and [r["id"] for r in listed["runs"]] == [other.pk, done.pk]
    shown = doc("show", done.pk)
    assert (shown["id"], shown["state"], shown["iterations_done"], shown["iterations_total"]) == \
           (done.pk, "succeeded", 3, 3)
    assert shown["latest_metrics"]["reward/mean"] == 0.4 and shown["latest_metrics"]["train/loss"] is None
    assert 100 < shown["elapsed_s"] < 140 and shown["eta_s"] is None
    assert doc("logs", done.pk) == {"run": done.pk, "log_tail": "step 1\nstep 2\n"}
    assert doc("events", done.pk) == []
    me = doc("whoami")
    assert me["username"] == "alice" and me["teams"] == [{"slug": "alpha", "name": "Alpha", "role": "member"}]
    compared = doc("compare", done.pk, other.pk)
    assert {r["id"] for r in compared["runs"]} == {done.pk, other.pk} and "config_diff" in compared


def test_show_logs_and_events_in_text(alice, umbra):
    from runs.services import transition

    team, user, _ = alice
    failed = _run(team, user, state="running", started_at=timezone.now() - dt.timedelta(seconds=30),
                  log_tail="loading model\n\x1b[31mboom\x1b[0m\n")
    _points(failed, "iteration/time_s", [4.0])
    _points(failed, "rollout/throughput_tok_s", [120.0])
    transition(failed.pk, "failed", "Ray job umbra-run-x exploded")

    code, out, err = umbra("show", failed.pk)
    assert code == 0, err
    rows = {line.split()[0]: line.split(None, 1)[1] for line in out.splitlines()[1:]}
    assert out.splitlines()[0] == f"Run {failed.pk}"
    assert rows["state"] == "failed" and rows["experiment"] == "alpha/cli" and rows["policy"] == "seer"
    assert rows["progress"].startswith("1/3 iterations, elapsed 0:00:")
    assert rows["metrics"] == "throughput 120.0 tok/s" and rows["reason"] == "Ray job umbra-run-x exploded"
    assert "queue" not in rows

    code, out, err = umbra("logs", failed.pk)
    assert code == 0 and out == "loading model\nboom\n", (out, err)  # colours dropped, no escape reaches the terminal
    code, out, err = umbra("events", failed.pk)
    assert code == 0 and "running" in out and "failed" in out and "exploded" in out


def test_missing_things_are_named(alice, umbra):
    team, user, _ = alice
    mine = _run(team, user)
    beta = factories.team("beta")
    secret = _run(beta, factories.member(beta, "bob"), state="failed")
    for argv in (("show", secret.pk), ("logs", secret.pk), ("events", secret.pk), ("follow", secret.pk),
                 ("cancel", secret.pk), ("resume", secret.pk), ("show", 999999)):
        code, _, err = umbra(*argv)
        assert code == 1 and err == f"umbra: no run {argv[1]} (or not visible to you)\n", (argv, err)
    code, _, err = umbra("compare", mine.pk, secret.pk)
    assert code == 1 and err == f"umbra: no run {secret.pk} (or not visible to you)\n"
    assert Run.objects.get(pk=secret.pk).state == "failed"


def test_submit_to_an_unknown_team_names_it(alice, umbra, tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("experiment: e\nmodel: tiny\n")
    code, _, err = umbra("submit", path, "--team", "nope")
    assert code == 1 and err == "umbra: no team 'nope' (or you are not a member of it)\n"
    assert Run.objects.count() == 0


def test_submit_json_and_dry_run(alice, umbra, tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("team: alpha\nexperiment: dry\nmodel: tiny\nrollout_policy: seer\niterations: 2\n")
    code, out, err = umbra("submit", path, "--dry-run")
    assert code == 0, err
    assert out.splitlines()[0].startswith("Dry run: alpha/dry would be queued at position ")
    assert "  rollout_policy: seer" in out and "  group_size: 8" in out  # normalised: defaults filled in
    code, out, err = umbra("submit", path, "--dry-run", "--json")
    assert code == 0 and err == "", err
    answer = json.loads(out)
    assert answer["dry_run"] is True and (answer["team"], answer["experiment"]) == ("alpha", "dry")
    assert answer["config"]["iterations"] == 2 and isinstance(answer["queue_position"], int)
    assert Run.objects.count() == 0  # a dry run stores nothing

    code, out, err = umbra("submit", path, "--json")
    assert code == 0 and err == "", err
    run = json.loads(out)
    assert Run.objects.get().pk == run["id"] and run["state"] == "queued"


def test_cancel_and_resume(alice, umbra):
    team, user, _ = alice  # no Celery worker here: the resumed run stays queued
    run = _run(team, user, state="queued")
    code, out, err = umbra("cancel", run.pk, "--json")
    assert code == 0 and json.loads(out)["state"] == "cancelled", err
    code, out, err = umbra("resume", run.pk)
    assert code == 0, err
    assert out.startswith(f"Run {run.pk} resumed (state: queued")
    run.refresh_from_db()
    assert (run.state, run.attempt) == ("queued", 1)
    code, _, err = umbra("resume", run.pk)
    assert code == 1 and _one_line(err).startswith(f"umbra: run {run.pk}: only failed or cancelled runs resume")


def test_whoami_and_logout(alice, umbra, live_server, tmp_path):
    _, _, token = alice
    code, out, err = umbra("whoami")
    assert code == 0, err
    assert out.splitlines()[0] == f"alice on {live_server.url}" and "alpha  member  (Alpha)" in out

    code, out, err = umbra("logout")
    assert code == 0, err
    assert f"Logged out of {live_server.url}" in out
    assert "the server revoked it" in out
    stored = json.loads((tmp_path / "umbra-config" / "credentials.json").read_text())
    assert stored == {"url": live_server.url, "token": ""}  # the URL stays as login's default
    code, _, err = umbra("whoami")
    assert code == 1 and "not logged in" in _one_line(err)
    code, out, _ = umbra("logout")
    assert code == 0 and "nothing to forget" in out
    assert not Token.objects.filter(key=token).exists()  # revoked on the server too


def test_a_refused_submission_prints_the_servers_reason_on_one_line(alice, umbra, tmp_path, settings):
    settings.UMBRA_TEAM_MAX_QUEUED = 1  # the live server runs in this process: it sees the override
    team, user, _ = alice
    _run(team, user, state="queued")
    path = tmp_path / "run.yaml"
    path.write_text("team: alpha\nexperiment: e\nmodel: tiny\n")
    code, out, err = umbra("submit", path)
    assert code == 1 and out == ""
    assert _one_line(err).startswith("umbra: team 'alpha' has 1 run waiting in the queue; the limit is 1"), err
    assert Run.objects.count() == 1
