"""``manage.py umbra_demo``: a config file replaces the demo's fields (``make learn``), bad
files are one-line command errors, and ``--follow`` prints reward and validation accuracy."""
import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from runs.management.commands.umbra_demo import Command
from runs.models import Run
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
])
def test_a_bad_config_file_is_a_command_error_and_submits_nothing(tmp_path, text, message):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(CommandError, match=message):
        call_command("umbra_demo", "--config", str(path), stdout=io.StringIO())
    with pytest.raises(CommandError, match="no such file"):
        call_command("umbra_demo", "--config", str(tmp_path / "missing.yaml"), stdout=io.StringIO())
    assert not Run.objects.exists()


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
