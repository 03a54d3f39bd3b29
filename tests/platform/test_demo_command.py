"""``manage.py umbra_demo``: a config file replaces the demo's fields (``make learn``), bad
files are one-line command errors, and ``--follow`` prints reward and validation accuracy."""
import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from runs.management.commands.umbra_demo import Command
from runs.models import Run
from teams.models import Team
from tests import factories

pytestmark = pytest.mark.django_db


def test_config_file_fields_win_over_the_demos(tmp_path):
    path = tmp_path / "learn.yaml"
    path.write_text("experiment: learn\nmodel: tiny\ndataset: arith-easy\nval_fraction: 0.25\nval_every: 3\n"
                    "val_before_train: true\nlearning_rate: 2.0e-5\niterations: 2\n")
    call_command("umbra_demo", "--config", str(path), "--prompts", "4", stdout=io.StringIO())
    run = Run.objects.latest("pk")
    assert run.experiment.name == "learn"
    assert {k: run.config[k] for k in ("model", "dataset", "val_before_train", "learning_rate", "iterations",
                                       "prompts_per_iteration")} == {
        "model": "tiny", "dataset": "arith-easy", "val_before_train": True, "learning_rate": 2e-5,
        "iterations": 2, "prompts_per_iteration": 4}


@pytest.mark.parametrize("text, message", [
    ("learning_rate: [1]\n", "expected a number, string or true/false"),
    ("val_before_train: true\n", "needs a validation set"),
    ("iterations: 2\niterations: 3\n", "given twice"),
    # the check the API and `umbra submit` make, strictly: YAML gives typed values
    ("iterations: '5'\n", "iterations: Input should be a valid integer"),
    ("val_before_train: 'yes'\nval_fraction: 0.25\n", "val_before_train: Input should be a valid boolean"),
    ("bogus: 1\nmodel: nonsense\n", "model: unknown model .*; bogus: Extra inputs are not permitted"),
    ("dataset: /etc/passwd\n", "dataset: unknown dataset '/etc/passwd'"),  # outside the data folders
    ("val_before_train: true\nval_fraction: 0.25\nval_every: 1\niterations: 1\n", "iterations: a run of 1 iteration"),
    ("team: alpha\n", "the demo submits to team 'demo', not 'alpha'"),
    ("team: [alpha]\n", "team: expected a number, string or true/false"),
    ("experiment: \"a\\x1b[2Jb\"\n", "experiment: must not contain control characters"),
    ("experiment: " + "x" * 201 + "\n", r"experiment: at most 200 characters \(it has 201\)"),
    ('model: "\\ud800"\n', r"lone surrogate \\ud800"),
])
def test_a_bad_config_file_is_a_command_error_and_submits_nothing(tmp_path, text, message):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(CommandError, match=message) as err:
        call_command("umbra_demo", "--config", str(path), stdout=io.StringIO())
    assert "\n" not in str(err.value)
    with pytest.raises(CommandError, match="no such file"):
        call_command("umbra_demo", "--config", str(tmp_path / "missing.yaml"), stdout=io.StringIO())
    assert not Run.objects.exists() and not Team.objects.exists()  # refused before the demo team is made


@pytest.mark.parametrize("path", ["/dev/zero", "DIR"])
def test_a_device_or_a_folder_as_config_is_refused_unread(tmp_path, path):
    with pytest.raises(CommandError, match="not a regular file"):
        call_command("umbra_demo", "--config", str(tmp_path) if path == "DIR" else path, stdout=io.StringIO())
    assert not Run.objects.exists()


def test_a_config_naming_the_demo_team_is_taken(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text("team: demo\nmodel: tiny\niterations: 1\n")
    call_command("umbra_demo", "--config", str(path), stdout=io.StringIO())
    assert Run.objects.get().experiment.team.slug == "demo"


def test_follow_prints_reward_and_validation_accuracy_per_iteration():
    run = factories.run(factories.experiment(factories.team(), "learn"), state=Run.State.SUCCEEDED)
    for step, values in {0: {"rollout/throughput_tok_s": 210.0, "reward/mean": 0.05, "val/accuracy": 0.2},
                         1: {"rollout/throughput_tok_s": 220.0, "reward/mean": 0.12}}.items():
        for name, value in values.items():
            run.metric_points.create(name=name, step=step, value=value)
    out = io.StringIO()
    command = Command(stdout=out)
    command._follow(run.pk)
    lines = [line for line in out.getvalue().splitlines() if "iteration" in line]
    assert lines[0].endswith("iteration 0: 210 tok/s rollout throughput, reward 0.050, val/accuracy 0.200 "
                             "(first point: the dashboard is live)")
    assert lines[1].endswith("iteration 1: 220 tok/s rollout throughput, reward 0.120")
