"""The `umbra` API client's pure parts: argument parsing, YAML submissions and their local
validation, error messages, tables rendered from answers shaped as in docs/api.md, and the
credentials file."""
import json
import os
import stat

import pytest
import requests
from rich.console import Console

from umbra import cli
from umbra.client import credentials
from umbra.client.api import ApiError, error_from_response
from umbra.client.commands import compare as compare_cmd
from umbra.client.commands import follow as follow_cmd
from umbra.client.commands import runs as runs_cmd
from umbra.client.errors import UsageError, flatten_field_errors
from umbra.client.render import fmt_number, fmt_with_ratio
from umbra.client.submission import load_submission, local_errors
from umbra.client.tables import compare_table, config_diff_table, finals_table, runs_table

RUN = {"id": 7, "team": "alpha", "experiment": "gsm8k-seer", "experiment_id": 3, "tags": ["gsm8k"],
       "state": "running", "policy": "seer", "model": "tiny", "config": {"model": "tiny"},
       "created_by": "alice", "created_at": "2026-11-29T22:00:00Z", "started_at": None, "finished_at": None,
       "iterations_done": 2, "iterations_total": 3, "url": "/runs/7/"}

COMPARE = {
    "x": "step", "metrics": ["rollout/throughput_tok_s"], "reference": 1,
    "runs": [
        {"id": 1, "label": "#1 Alpha/exp static-group", "team": "alpha", "experiment": "exp",
         "policy": "static-group", "state": "succeeded", "url": "/runs/1/",
         "summary": {"throughput_tok_s": 230.0, "tail_time_s": 12.0, "accept_len": None,
                     "reward": 0.31, "accuracy": 0.25, "iterations": 10},
         "ratios": {"throughput_tok_s": 1.0, "tail_time_s": 1.0, "accept_len": None,
                    "reward": 1.0, "accuracy": 1.0, "iterations": 1.0}},
        {"id": 2, "label": "#2 Alpha/exp [seer]", "team": "alpha", "experiment": "exp",
         "policy": "seer", "state": "failed", "url": "/runs/2/",
         "summary": {"throughput_tok_s": 231.0, "tail_time_s": 6.0, "accept_len": 2.5,
                     "reward": 0.31, "accuracy": None, "iterations": 5},
         "ratios": {"throughput_tok_s": 1.0043, "tail_time_s": 0.5, "accept_len": None,
                    "reward": 1.0, "accuracy": None, "iterations": 0.5}}],
    "config_diff": {"keys": ["rollout_policy", "spec_decoding"],
                    "values": {"1": {"rollout_policy": "static-group", "spec_decoding": False},
                               "2": {"rollout_policy": "seer", "spec_decoding": True}}},
    "series": {"rollout/throughput_tok_s": {"1": {"x": [0, 1], "y": [200.0, 230.0]},
                                            "2": {"x": [0, 1], "y": [220.0, 253.0]}}},
}


def render(renderable) -> str:
    console = Console(record=True, width=250, file=open(os.devnull, "w"))
    console.print(renderable)
    return console.export_text()


@pytest.fixture
def config_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("UMBRA_CONFIG_DIR", str(tmp_path / "cfg"))
    monkeypatch.delenv("UMBRA_URL", raising=False)
    monkeypatch.delenv("UMBRA_TOKEN", raising=False)
    return tmp_path / "cfg"


# --- argument parsing -------------------------------------------------------------------------

def test_parser_knows_every_subcommand_and_keeps_the_old_ones():
    p = cli.build_parser()
    assert p.parse_args(["prepare-model", "tiny", "--force"]).force is True
    assert p.parse_args(["bench", "rollout", "--prompts", "4"]).prompts == 4
    a = p.parse_args(["submit", "c.yaml", "--team", "alpha", "--experiment", "e"])
    assert (a.command, a.config, a.team, a.experiment) == ("submit", "c.yaml", "alpha", "e")
    a = p.parse_args(["runs", "--state", "running", "--limit", "5", "--tag", "x"])
    assert runs_cmd.filters(a) == {"state": "running", "tag": "x"} and a.limit == 5
    a = p.parse_args(["follow", "#12", "--interval", "0.5"])
    assert (a.run, a.interval) == (12, 0.5)
    a = p.parse_args(["compare", "3", "4", "3", "--reference", "4", "--metrics", "reward/mean, train/loss"])
    assert compare_cmd.query(a) == {"runs": "3,4", "reference": 4, "metrics": "reward/mean,train/loss"}
    assert p.parse_args(["login", "--url", "http://h:1"]).url == "http://h:1"


@pytest.mark.parametrize("argv,needle", [
    (["runs", "--state", "bogus"], "invalid choice: 'bogus'"),
    (["runs", "--limit", "0"], "--limit: must be at least 1"),
    (["runs", "--limit", "many"], "not a number"),
    (["cancel", "seven"], "invalid run id 'seven'"),
    (["cancel", "0"], "invalid run id"),
    (["compare"], "required: RUN"),
    (["nope"], "invalid choice"),
])
def test_bad_arguments_are_one_line_and_exit_2(argv, needle, capsys):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("umbra: ") and needle in err and err.count("\n") == 1


def test_compare_refuses_a_reference_outside_the_runs_and_empty_metrics():
    p = cli.build_parser()
    with pytest.raises(UsageError, match="--reference 9 is not among"):
        compare_cmd.query(p.parse_args(["compare", "1", "2", "--reference", "9"]))
    with pytest.raises(UsageError, match="names no metric"):
        compare_cmd.query(p.parse_args(["compare", "1", "--metrics", " , "]))
    with pytest.raises(UsageError, match="at most 50"):
        compare_cmd.query(p.parse_args(["compare", *map(str, range(1, 52))]))


def test_help_returns_0(capsys):
    assert cli.main(["submit", "--help"]) == 0
    assert "experiment" in capsys.readouterr().out


# --- YAML submissions and local validation ---------------------------------------------------

def test_submission_takes_team_and_experiment_out_of_the_config(tmp_path):
    f = tmp_path / "run.yaml"
    f.write_text("team: alpha\nexperiment: gsm8k\nmodel: tiny\ngroup_size: 4\n")
    sub = load_submission(str(f))
    assert (sub.team, sub.experiment, sub.config) == ("alpha", "gsm8k", {"model": "tiny", "group_size": 4})
    flagged = load_submission(str(f), team="beta", experiment="other")
    assert (flagged.team, flagged.experiment) == ("beta", "other")
    assert local_errors(sub.config) == []


def test_an_empty_file_is_all_defaults(tmp_path):
    f = tmp_path / "empty.yaml"
    f.write_text("")
    sub = load_submission(str(f))
    assert (sub.team, sub.experiment, sub.config) == (None, None, {})


@pytest.mark.parametrize("content,needle", [
    ("model: [tiny\n", "invalid YAML (line 2"),
    ("- model\n- tiny\n", "expected a mapping"),
    ("team: ''\nmodel: tiny\n", "`team` must be a non-empty name"),
    ("model: tiny\nmodel: smollm2\n", "key 'model' is given twice"),  # the form's YAML loader too
])
def test_unreadable_submissions_are_usage_errors(tmp_path, content, needle):
    f = tmp_path / "bad.yaml"
    f.write_text(content)
    with pytest.raises(UsageError, match=needle.replace("(", r"\(").replace("[", r"\[")):
        load_submission(str(f))
    with pytest.raises(UsageError, match="no such file"):
        load_submission(str(tmp_path / "missing.yaml"))


def test_local_errors_name_each_field():
    errors = dict(local_errors({"model": "tiny", "group_size": 1, "gruop_size": 4, "max_tokens": 900,
                                "rollout_policy": "fastest"}))
    assert "greater than or equal to 2" in errors["group_size"]
    assert "Extra inputs are not permitted" in errors["gruop_size"]
    assert "exceeds what model 'tiny' allows" in errors["max_tokens"]
    assert "Input should be" in errors["rollout_policy"]
    assert not any(m.startswith("Value error") for m in errors.values())


def test_file_and_folder_names_are_left_for_the_server():
    # a path names a file on the platform's machines, not necessarily this one
    assert local_errors({"model": "/srv/models/llama", "dataset": "/srv/data/gsm8k.jsonl"}) == []
    assert local_errors({"val_dataset": "/srv/data/val.parquet", "val_every": 5}) == []
    # relative names the server looks up in its operator's folders (a model or save_to_disk
    # folder by its bare name too): only the server knows them
    assert local_errors({"model": "mymodel", "dataset": "savedset", "reward": "myreward.py:compute_score"}) == []
    assert local_errors({"dataset": "two.jsonl", "val_fraction": 0.5, "val_every": 1}) == []  # the server's file
    assert "iterations" in dict(local_errors({"model": "mymodel", "iterations": 0}))  # the rest is still checked


def test_submit_with_invalid_fields_prints_field_lines_and_exits_2_before_any_request(tmp_path, capsys,
                                                                                     config_dir):
    f = tmp_path / "bad.yaml"
    f.write_text("team: alpha\nexperiment: e\nmodel: tiny\ngroup_size: 1\ntemperature: warm\n")
    assert cli.main(["submit", str(f)]) == 2  # not logged in: the local check answers first
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "umbra: group_size: Input should be greater than or equal to 2"
    assert lines[1].startswith("umbra: temperature: Input should be a valid number")
    assert len(lines) == 2


def test_submit_without_experiment_says_how_to_give_one(tmp_path, capsys, config_dir):
    f = tmp_path / "ok.yaml"
    f.write_text("model: tiny\n")
    assert cli.main(["submit", str(f)]) == 2
    assert "pass --experiment" in capsys.readouterr().err


# --- errors --------------------------------------------------------------------------------

def response(status: int, body, reason: str = "") -> requests.Response:
    resp = requests.Response()
    resp.status_code, resp.reason = status, reason
    resp._content = body.encode() if isinstance(body, str) else json.dumps(body).encode()
    return resp


def test_field_errors_flatten_with_dotted_names():
    assert flatten_field_errors({"config": {"group_size": ["too small", "odd"]}, "team": ["required"]}) == [
        ("config.group_size", "too small"), ("config.group_size", "odd"), ("team", "required")]


def test_api_errors_carry_the_servers_message_and_exit_code():
    err = error_from_response(response(409, {"detail": "run has already ended (succeeded)"}))
    assert (err.message, err.exit_code, err.status) == ("run has already ended (succeeded)", 1, 409)
    err = error_from_response(response(400, {"config": {"group_size": ["Input should be >= 2"]}}))
    assert err.exit_code == 2 and err.fields == [("config.group_size", "Input should be >= 2")]
    err = error_from_response(response(400, {"non_field_errors": ["Unable to log in."]}))
    assert err.fields == [("", "Unable to log in.")] and err.lines() == ["umbra: Unable to log in."]
    assert "not found" in error_from_response(response(404, {"detail": "No Run matches the given query."})).message
    assert "umbra login" in error_from_response(response(401, {"detail": "Invalid token."})).message
    err = error_from_response(response(500, "<html>boom</html>", "Internal Server Error"))
    assert err.message == "server error (HTTP 500 Internal Server Error)"


def test_an_error_message_is_printed_on_one_line():
    assert ApiError("line one\nline two").with_prefix("run 3").lines() == ["umbra: run 3: line one line two"]


# --- rendering -----------------------------------------------------------------------------

def test_numbers_and_ratios():
    assert fmt_with_ratio(231.0, 1.0187) == "231.0 (1.02x)"
    assert fmt_with_ratio(0.31, None) == "0.310"
    assert fmt_with_ratio(None, None) == "–"
    assert (fmt_number(12.345), fmt_number(10), fmt_number(float("nan"))) == ("12.35", "10", "–")


def test_runs_table_from_run_objects(monkeypatch):
    monkeypatch.setenv("TZ", "UTC")
    import time
    time.tzset()
    out = render(runs_table([RUN, {**RUN, "id": 8, "state": "queued", "iterations_done": 0,
                                   "iterations_total": None, "experiment": "[bold]x"}]))
    for header in ("id", "team", "experiment", "state", "policy", "model", "iterations", "created"):
        assert header in out
    row = next(line for line in out.splitlines() if line.strip().startswith("7"))
    for cell in ("alpha", "gsm8k-seer", "running", "seer", "tiny", "2/3", "2026-11-29 22:00"):
        assert cell in row
    assert "[bold]x" in out and "0/?" in out  # names are not rich markup


def test_compare_table_shows_each_value_with_its_ratio():
    out = render(compare_table(COMPARE))
    for header in ("throughput tok/s", "tail time s", "accept len", "reward", "accuracy", "iterations"):
        assert header in out
    ref = next(line for line in out.splitlines() if "#1 Alpha/exp static-group (ref)" in line)
    assert "230.0 (1.00x)" in ref and "12.00 (1.00x)" in ref and "10 (1.00x)" in ref
    seer = next(line for line in out.splitlines() if "#2 Alpha/exp [seer]" in line)
    assert "231.0 (1.00x)" in seer and "6.00 (0.50x)" in seer and "2.50" in seer and "5 (0.50x)" in seer
    assert "failed" in seer


def test_finals_and_config_diff_tables():
    finals = render(finals_table(COMPARE))
    assert "rollout/throughput_tok_s" in finals and "253.0 (1.10x)" in finals and "230.0 (1.00x)" in finals
    diff = render(config_diff_table(COMPARE))
    row = next(line for line in diff.splitlines() if "rollout_policy" in line)
    assert "static-group" in row and "seer" in row
    assert "false" in diff and "true" in diff and "#1" in diff and "#2" in diff
    assert config_diff_table({**COMPARE, "config_diff": {"keys": [], "values": {}}}) is None
    assert finals_table({**COMPARE, "series": {}}) is None


def test_follow_shows_the_latest_point_of_each_metric():
    answer = {"run": 7, "x": "step", "series": {
        "rollout/throughput_tok_s": {"x": [0, 2, 1], "y": [100.0, 300.0, 200.0]},
        "reward/mean": {"x": [0], "y": [0.25]}}}
    latest = follow_cmd.latest_values(answer)
    assert latest == {"rollout/throughput_tok_s": 300.0, "rollout/tail_time_s": None, "reward/mean": 0.25,
                      "train/loss": None}
    assert follow_cmd.metrics_line(latest) == "throughput 300.0 tok/s  reward 0.250"


# --- credentials ---------------------------------------------------------------------------

def test_credentials_file_is_private_and_env_overrides_it(config_dir, monkeypatch):
    path = credentials.save("http://example.test:8000/api/", "tok-1")
    assert path == config_dir / "credentials.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert json.loads(path.read_text()) == {"url": "http://example.test:8000", "token": "tok-1"}
    assert credentials.load() == credentials.Credentials("http://example.test:8000", "tok-1")
    monkeypatch.setenv("UMBRA_TOKEN", "tok-env")
    assert credentials.load().token == "tok-env"
    monkeypatch.setenv("UMBRA_URL", "other.test:9000")
    assert credentials.load() == credentials.Credentials("http://other.test:9000", "tok-env")
    monkeypatch.delenv("UMBRA_TOKEN")
    # the stored token is never sent to another server
    with pytest.raises(Exception, match="umbra login"):
        credentials.load()


def test_saving_again_keeps_the_file_private_whatever_the_umask(config_dir):
    old = os.umask(0)
    try:
        credentials.save("http://a", "t1")
        path = credentials.save("http://a", "t2")
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and credentials.load().token == "t2"


def test_not_logged_in_tells_to_run_login(config_dir, capsys):
    assert cli.main(["runs"]) == 1
    assert capsys.readouterr().err == "umbra: not logged in: run `umbra login` (or set UMBRA_URL and UMBRA_TOKEN)\n"


def test_a_broken_credentials_file_is_reported_not_raised(config_dir, capsys):
    config_dir.mkdir()
    (config_dir / "credentials.json").write_text("{not json")
    assert cli.main(["cancel", "3"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("umbra: cannot read") and "umbra login" in err and err.count("\n") == 1


def test_ctrl_c_exits_130_quietly(monkeypatch, capsys):
    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(follow_cmd, "run", interrupted)
    assert cli.main(["follow", "3"]) == 130
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""


# --- issue 18: version, new commands, --json, follow's plain lines -------------------------------

def test_version_is_the_installed_distributions(capsys):
    from importlib import metadata

    assert cli.main(["--version"]) == 0
    assert capsys.readouterr().out == f"umbra {metadata.version('umbra')}\n"


def test_parser_knows_the_new_commands_and_their_json_flag():
    p = cli.build_parser()
    for command in ("show", "logs", "events", "resume", "cancel"):
        a = p.parse_args([command, "#5", "--json"])
        assert (a.command, a.run, a.json) == (command, 5, True)
    for argv in (["runs", "--json"], ["whoami", "--json"], ["compare", "1", "--json"],
                 ["submit", "c.yaml", "--json", "--dry-run"]):
        assert p.parse_args(argv).json is True
    assert p.parse_args(["submit", "c.yaml", "--dry-run"]).dry_run is True
    assert p.parse_args(["logout", "--url", "http://h:1"]).url == "http://h:1"


def test_a_429_prints_the_servers_detail_on_one_line_and_exits_1():
    err = error_from_response(response(429, {"detail": "team alpha already has 4 queued runs (the limit)"}))
    assert (err.exit_code, err.lines()) == (1, ["umbra: team alpha already has 4 queued runs (the limit)"])


def test_a_404_names_what_is_missing():
    err = error_from_response(response(404, {"detail": "no such run"}))
    assert err.naming("run 42").lines() == ["umbra: no run 42 (or not visible to you)"]
    err = error_from_response(response(409, {"detail": "run has already ended"}))
    assert err.naming("run 42").message == "run has already ended"  # only a 404 is renamed


def test_durations_eta_and_queue_positions():
    from umbra.client.render import fmt_duration, state_label

    assert (fmt_duration(0), fmt_duration(83.4), fmt_duration(90061), fmt_duration(None)) == \
           ("0:00:00", "0:01:23", "25:01:01", "–")
    assert follow_cmd.eta_s(1, 3, [10.0], 12.0) == 20.0  # mean iteration time so far
    assert follow_cmd.eta_s(2, 4, [], 60.0) == 60.0  # no iteration times yet: elapsed per iteration
    assert follow_cmd.eta_s(0, 3, [], 5.0) is None and follow_cmd.eta_s(1, None, [1.0], 1.0) is None
    assert state_label("queued", 2) == "queued (#2)" and state_label("queued", None) == "queued"
    assert state_label("running", 2) == "running"


def test_follow_lines_count_from_the_runs_start():
    run = {"id": 7, "state": "running", "iterations_total": 4, "iterations_done": 2,
           "created_at": "2026-01-01T09:00:00Z", "started_at": "2026-01-01T10:00:00Z", "finished_at": None}
    metrics = {"series": {"iteration/time_s": {"x": [0, 1], "y": [30.0, 50.0]},
                          "reward/mean": {"x": [0, 1], "y": [0.1, 0.3]}}}
    now = follow_cmd.parse_time("2026-01-01T10:01:40Z")
    assert follow_cmd.iteration_line(run, metrics, 1, now=now) == \
        "run 7  iteration 1/4  elapsed 0:01:40  eta 0:01:30  reward 0.100"
    assert follow_cmd.iteration_line(run, metrics, 2, now=now) == \
        "run 7  iteration 2/4  elapsed 0:01:40  eta 0:01:20  reward 0.300"
    assert follow_cmd.state_line({**run, "state": "queued", "queue_position": 3}) == "run 7  queued (#3)"
    assert follow_cmd.elapsed_s({**run, "started_at": None}, now) == 3700.0  # created_at stands in


def test_json_output_is_strict_and_logs_keep_their_lines(capsys):
    from umbra.client.output import print_json
    from umbra.client.render import printable_log

    print_json({"a": float("nan"), "b": [1.5, float("inf")], "c": "é"})
    out = capsys.readouterr().out
    assert json.loads(out) == {"a": None, "b": [1.5, None], "c": "é"} and out.endswith("}\n")
    assert printable_log("a\r\n\tb\x1b[0m\n") == "a\n    b\n"  # colours dropped, as on the run page
    assert printable_log("\x1b[36m(pid=1)\x1b[0m up\x1b]0;title\x07 \x1b x") == "(pid=1) up ? x"


def test_show_lines_give_the_queue_position_of_a_queued_run():
    from umbra.client.commands import show

    lines = show.render_lines({**RUN, "state": "queued", "queue_position": 2, "iterations_done": 0,
                               "latest_metrics": {}, "elapsed_s": None, "eta_s": None, "reason": None},
                              "http://h/runs/7/")
    rows = {line.split()[0]: line.split(None, 1)[1] for line in lines[1:]}
    assert lines[0] == "Run 7" and rows["state"] == "queued (#2)" and rows["queue"] == "position 2"
    assert rows["progress"] == "0/3 iterations" and rows["metrics"] == "none yet" and rows["url"] == "http://h/runs/7/"


def test_show_gives_validation_accuracy_apart_from_training_accuracy():
    from umbra.client.commands import show

    lines = show.render_lines({**RUN, "state": "running", "iterations_done": 3, "elapsed_s": 60.0, "eta_s": None,
                               "reason": None, "latest_metrics": {"reward/accuracy": 0.25, "val/accuracy": 0.875}},
                              "http://h/runs/7/")
    metrics = next(line for line in lines if line.split()[0] == "metrics")
    assert "accuracy 0.250" in metrics and "val accuracy 0.875" in metrics


def test_logout_forgets_only_the_stored_servers_token(config_dir):
    credentials.save("http://a.test", "tok")
    assert credentials.forget("http://b.test") is None and credentials.load().token == "tok"
    assert credentials.forget() == ("http://a.test", "tok")
    assert json.loads(credentials.credentials_path().read_text()) == {"url": "http://a.test", "token": ""}
    assert credentials.forget() is None


def test_an_events_multi_line_reason_keeps_its_lines():
    from umbra.client.commands.events import events_table

    out = render(events_table([{"kind": "state", "from_state": "running", "to_state": "failed",
                                "reason": "job failed:\nValueError: bad\x1b[31m", "at": None}]))
    assert "job failed:" in out and "ValueError: bad" in out and "?" not in out
    assert [line for line in out.splitlines() if "ValueError" in line][0].strip().endswith("ValueError: bad")
