"""REST API behaviour: submission with field errors, cancel, filters, metric series with
downsampling, comparison and its CSV exports."""
import csv
import io

import pytest
from rest_framework.test import APIClient

from runs.models import Experiment, Run
from teams.models import Membership
from telemetry.models import MetricPoint
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def api():
    team = factories.team("alpha")
    user = factories.member(team, "alice")
    client = APIClient()
    client.force_authenticate(user)
    client.user, client.team = user, team
    return client


def _run(team, experiment="exp", tags=(), **config):
    return factories.run(factories.experiment(team, experiment, tags=list(tags)),
                         config={"model": "tiny", "iterations": 3, **config})


def _points(run, name, values):
    MetricPoint.objects.bulk_create([MetricPoint(run=run, name=name, step=i, value=v) for i, v in enumerate(values)])


def test_submit_reports_every_bad_field_and_stores_nothing(api):
    resp = api.post("/api/runs/", {"team": "alpha", "experiment": "e", "config": {
        "group_size": 1, "temperature": "hot", "bogus": 1, "rollout_policy": "fastest"}}, format="json")
    assert resp.status_code == 400
    errors = resp.json()["config"]
    assert set(errors) == {"group_size", "temperature", "bogus", "rollout_policy"}
    assert "greater than or equal to 2" in errors["group_size"][0]
    assert api.post("/api/runs/", {"team": "alpha", "experiment": " ", "config": {}}, format="json").json() == {
        "experiment": ["This field may not be blank."]}
    assert Run.objects.count() == 0 and Experiment.objects.count() == 0


def test_submit_then_cancel_then_cancel_again(api):
    resp = api.post("/api/runs/", {"team": "alpha", "experiment": "e", "config": {"model": "tiny", "iterations": 2}},
                    format="json")
    assert resp.status_code == 201, resp.json()
    run = resp.json()
    assert run["state"] == "queued" and run["iterations_total"] == 2 and run["iterations_done"] == 0
    assert run["config"]["group_size"] == 8  # defaults filled in
    assert api.post(f"/api/runs/{run['id']}/cancel/").status_code == 202
    again = api.post(f"/api/runs/{run['id']}/cancel/")
    assert again.status_code == 409 and again.json() == {"detail": "run has already ended (cancelled)"}
    events = api.get(f"/api/runs/{run['id']}/events/").json()
    assert [e["to_state"] for e in events] == ["queued", "cancelled"]


def test_run_list_filters(api):
    a = _run(api.team, "gsm", tags=["math"], rollout_policy="seer")
    b = _run(api.team, "arith", rollout_policy="static-group")
    Run.objects.filter(pk=b.pk).update(state=Run.State.SUCCEEDED)
    _points(a, "iteration/time_s", [1.0, 2.0])

    def ids(query):
        resp = api.get(f"/api/runs/?{query}")
        assert resp.status_code == 200, resp.json()
        return [r["id"] for r in resp.json()["results"]]

    assert ids("") == [b.pk, a.pk]
    assert ids("policy=seer") == [a.pk] and ids("state=succeeded") == [b.pk]
    assert ids("tag=math") == [a.pk] and ids("experiment=arith") == [b.pk] and ids(f"experiment={a.experiment_id}") == [a.pk]
    assert ids("search=gs") == [a.pk] and ids("team=alpha") == [b.pk, a.pk] and ids("team=beta") == []
    assert ids("created_after=2000-01-01") == [b.pk, a.pk] and ids("created_before=2000-01-01") == []
    assert api.get(f"/api/runs/{a.pk}/").json()["iterations_done"] == 2
    bad = api.get("/api/runs/?state=exploded")
    assert bad.status_code == 400 and "state" in bad.json()


def test_metrics_are_downsampled_with_spikes_kept(api):
    run = _run(api.team)
    values = [1.0] * 10_000
    values[4321] = 500.0
    _points(run, "rollout/throughput_tok_s", values)
    _points(run, "reward/mean", [0.1, 0.2])
    body = api.get(f"/api/runs/{run.pk}/metrics/?max_points=1000").json()
    tput = body["series"]["rollout/throughput_tok_s"]
    assert len(tput["y"]) <= 1000 and 500.0 in tput["y"] and 4321 in tput["x"]
    assert body["series"]["reward/mean"] == {"x": [0, 1], "y": [0.1, 0.2]}
    rel = api.get(f"/api/runs/{run.pk}/metrics/?names=reward/mean&x=relative").json()
    assert list(rel["series"]) == ["reward/mean"]
    assert rel["names"] == body["names"] == ["reward/mean", "rollout/throughput_tok_s"]  # every name, asked or not
    xs = rel["series"]["reward/mean"]["x"]  # seconds since the run's first point (of any metric)
    assert 0.0 <= xs[0] <= xs[1] < 60
    assert api.get(f"/api/runs/{run.pk}/metrics/?x=sideways").status_code == 400
    assert api.get(f"/api/runs/{run.pk}/metrics/?max_points=1").status_code == 400


def test_metrics_without_names_send_the_first_50_and_name_every_one(api):
    from api.views.metrics import DEFAULT_SERIES

    run = _run(api.team)
    for i in range(DEFAULT_SERIES + 3):
        _points(run, f"m/{i:03d}", [float(i)])
    body = api.get(f"/api/runs/{run.pk}/metrics/").json()
    assert len(body["series"]) == DEFAULT_SERIES and len(body["names"]) == DEFAULT_SERIES + 3
    assert "m/052" not in body["series"] and "m/052" in body["names"]  # a reader sees what to ask for


def test_compare_summary_reference_ratios_diff_and_csv(api):
    base = {"max_tokens": 64}
    sg = _run(api.team, rollout_policy="static-group", **base)
    seer = _run(api.team, rollout_policy="seer", chunk_tokens=16, **base)
    _points(sg, "rollout/throughput_tok_s", [100.0, 110.0, 120.0])
    _points(seer, "rollout/throughput_tok_s", [150.0, 165.0, 180.0])
    _points(seer, "reward/mean", [0.2, 0.4])
    _points(seer, "iteration/time_s", [5.0, 5.0])
    resp = api.get(f"/api/compare/?runs={seer.pk},{sg.pk}&metrics=rollout/throughput_tok_s,reward/mean")
    assert resp.status_code == 200, resp.json()
    doc = resp.json()
    assert doc["reference"] == sg.pk
    rows = {r["id"]: r for r in doc["runs"]}
    assert rows[seer.pk]["summary"]["throughput_tok_s"] == 165.0
    assert rows[seer.pk]["ratios"]["throughput_tok_s"] == pytest.approx(1.5)
    assert rows[seer.pk]["summary"]["reward"] == 0.4 and rows[seer.pk]["ratios"]["reward"] is None
    assert doc["config_diff"]["keys"] == ["chunk_tokens", "rollout_policy"]
    assert doc["series"]["rollout/throughput_tok_s"][str(sg.pk)]["y"] == [100.0, 110.0, 120.0]
    assert str(sg.pk) not in doc["series"]["reward/mean"]

    chosen = api.get(f"/api/compare/?runs={seer.pk},{sg.pk}&reference={seer.pk}").json()
    assert chosen["reference"] == seer.pk
    summary = list(csv.DictReader(io.StringIO(api.get(f"/api/compare/summary.csv?runs={seer.pk},{sg.pk}").content.decode())))
    assert [int(r["run"]) for r in summary] == [seer.pk, sg.pk] and float(summary[0]["throughput_tok_s_ratio"]) == 1.5
    series = list(csv.reader(io.StringIO(api.get(f"/api/compare/series.csv?runs={sg.pk}").content.decode())))
    assert series[0] == ["run", "metric", "step", "y"] and len(series) == 4


@pytest.mark.parametrize("query,message", [
    ("runs=", "runs"), ("runs=a,b", "comma-separated integers"), ("runs=1&x=up", "x"),
    ("runs=" + ",".join(str(i) for i in range(1, 60)), "between 1 and 50"),
])
def test_compare_bad_queries_get_400_with_a_message(api, query, message):
    run = _run(api.team)
    resp = api.get("/api/compare/?" + query.format(a=run.pk))
    assert resp.status_code == 400 and message in resp.content.decode()


def test_membership_keeps_an_admin(api):
    Membership.objects.filter(user=api.user).update(role="admin")
    factories.user("bob")
    assert api.post("/api/teams/alpha/members/", {"username": "bob", "role": "viewer"}, format="json").status_code == 201
    nobody = api.post("/api/teams/alpha/members/", {"username": "nobody"}, format="json")
    assert nobody.status_code == 404 and nobody.json() == {"detail": "no such user"}
    last = api.delete("/api/teams/alpha/members/alice/")
    assert last.status_code == 409 and "at least one admin" in last.json()["detail"]
    assert api.delete("/api/teams/alpha/members/bob/").status_code == 204
    assert [m["username"] for m in api.get("/api/teams/alpha/members/").json()] == ["alice"]


def test_token_login(client):
    factories.user("carol", password="pw-carol-123")
    bad = client.post("/api/auth/token/", {"username": "carol", "password": "nope"})
    assert bad.status_code == 400 and "non_field_errors" in bad.json()
    token = client.post("/api/auth/token/", {"username": "carol", "password": "pw-carol-123"}).json()["token"]
    me = client.get("/api/me/", HTTP_AUTHORIZATION=f"Token {token}")
    assert me.status_code == 200 and me.json() == {"username": "carol", "teams": []}


def test_api_config_types_are_strict_and_paths_confined(api):
    resp = api.post("/api/runs/", {"team": "alpha", "experiment": "e", "config": {
        "iterations": True, "max_tokens": "64", "seer_divided": "no", "dataset": "/etc/passwd"}}, format="json")
    assert resp.status_code == 400
    errors = resp.json()["config"]
    assert set(errors) == {"iterations", "max_tokens", "seer_divided", "dataset"}
    assert "or a path under" in errors["dataset"][0] and "JSON" not in errors["dataset"][0]
    assert Run.objects.count() == 0


def test_a_relative_data_path_is_found_in_the_data_folders_and_stored_in_full(api, settings, tmp_path,
                                                                               monkeypatch):
    data = tmp_path / "data"
    data.mkdir()
    (data / "mine.jsonl").write_text('{"question": "1 + 1?", "answer": "#### 2"}\n' * 4)
    settings.UMBRA_DATA_DIRS = [str(data)]
    monkeypatch.chdir(tmp_path)  # the server's own folder: ../ from there leaves the data folders
    resp = api.post("/api/runs/", {"team": "alpha", "experiment": "e", "config": {"dataset": "mine.jsonl"}},
                    format="json")
    assert resp.status_code == 201, resp.content
    assert Run.objects.get().config["dataset"] == str(data / "mine.jsonl")  # a worker elsewhere reads the same file
    resp = api.post("/api/runs/", {"team": "alpha", "experiment": "e", "config": {"dataset": "data/mine.jsonl"}},
                    format="json")
    assert resp.status_code == 201, resp.content
    assert Run.objects.latest("pk").config["dataset"] == str(tmp_path / "data/mine.jsonl")  # from the server's folder
    # '..' is refused before anything is looked up: the answer must not say whether a file exists
    answers = set()
    for probe in ("../../../../etc/hostname", "../../../../etc/no-such-file", "data/../data/mine.jsonl"):
        resp = api.post("/api/runs/", {"team": "alpha", "experiment": "e", "config": {"dataset": probe}},
                        format="json")
        assert resp.status_code == 400
        answers.add(resp.json()["config"]["dataset"][0].replace(probe, "<probe>"))
    assert answers == {"a relative dataset path may not contain '..': name it from its folder, or in full"}
    resp = api.post("/api/runs/", {"team": "alpha", "experiment": "e", "config": {"dataset": "nope.jsonl"}},
                    format="json")
    assert resp.status_code == 400 and "unknown dataset 'nope.jsonl'" in resp.json()["config"]["dataset"][0]


@pytest.mark.parametrize("method,path,body", [
    ("post", "/api/runs/", "[" * 100_000 + "]" * 100_000),
    ("post", "/api/experiments/", "[" * 100_000 + "]" * 100_000),
    ("post", "/api/runs/", '{"team": "alpha", "experiment": "x", "config": {"a": "' + "x" * 9_000_000 + '"}}'),
])
def test_hostile_bodies_get_json_400(api, method, path, body):
    resp = getattr(api, method)(path, body, content_type="application/json")
    assert resp.status_code == 400 and "detail" in resp.json()


@pytest.mark.parametrize("url", ["/api/runs/?experiment=%C2%B2", "/compare/?experiment=%C2%B2", "/compare/?runs=%C2%B2",
                                 "/api/compare/?runs=%C2%B9", "/api/teams/alpha/members/%00/", "/api/runs/?search=%00"])
def test_odd_characters_are_never_server_errors(api, url):
    """Unicode digits are names, not ids (an empty match); NUL is refused."""
    from django.test import Client

    client = Client()
    client.force_login(api.user)
    resp = client.get(url) if "members" not in url else api.delete(url)
    assert resp.status_code < 500, (url, resp.status_code)
    if "%00" in url:
        assert resp.status_code == 400


def test_control_characters_in_names_and_formula_cells(api):
    bad = api.post("/api/runs/", {"team": "alpha", "experiment": "x\x1b[31mred", "config": {}}, format="json")
    assert bad.status_code == 400 and "control characters" in bad.json()["experiment"][0]
    run = _run(api.team, experiment='=HYPERLINK("http://evil.example","x")')
    rows = list(csv.reader(io.StringIO(api.get(f"/api/compare/summary.csv?runs={run.pk}").content.decode())))
    assert rows[1][2].startswith("'=")


def test_csv_exports_quote_every_formula_start_and_keep_numbers_numbers(api):
    """OWASP's CSV injection advice: a text cell starting with = + - @ tab or CR gets a leading
    quote, so a spreadsheet shows it instead of running it; numbers (negative ones too) stay as they are."""
    starts = ["=", "+", "-", "@", "\t", "\r"]
    runs = [_run(api.team, experiment=f"{c}cmd|' /C calc'!A0") for c in starts] + [_run(api.team, experiment="plain-1")]
    for run in runs:
        _points(run, "reward/mean", [-0.5])
    ids = ",".join(str(r.pk) for r in runs)
    summary = list(csv.DictReader(io.StringIO(api.get(f"/api/compare/summary.csv?runs={ids}").content.decode())))
    by_run = {int(row["run"]): row for row in summary}
    assert [by_run[r.pk]["experiment"] for r in runs] == [f"'{c}cmd|' /C calc'!A0" for c in starts] + ["plain-1"]
    assert {row["reward"] for row in summary} == {"-0.5"}  # a number, not quoted
    series = list(csv.reader(io.StringIO(api.get(f"/api/compare/series.csv?runs={ids}&metrics=reward/mean")
                                         .content.decode())))
    assert {tuple(row[1:]) for row in series[1:]} == {("reward/mean", "0", "-0.5")}


def test_compare_answer_size_is_bounded(api):
    runs = [_run(api.team, experiment=f"e{i}") for i in range(50)]
    resp = api.get(f"/api/compare/?runs={','.join(str(r.pk) for r in runs)}&max_points=5000&metrics=a,b")
    assert resp.status_code == 400 and "lower max_points" in resp.json()["detail"]


def test_login_page_throttles_failed_attempts(client, fast_password_hashing):
    factories.user("dora", password="pw-dora-123")
    codes = [client.post("/accounts/login/", {"username": "dora", "password": "wrong"}).status_code for _ in range(21)]
    assert codes[:20] == [200] * 20 and codes[20] == 429
