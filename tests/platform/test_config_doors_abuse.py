"""Values that one door read differently from the others, or answered with a 500: a YAML flag
that is not true/false (a checkbox took `0` and `'no'` for checked), a lone surrogate escape
(the error quoting it could not be written as UTF-8) and val_before_train on a 1-iteration
run (its two validations would share step 0). Each door now refuses them alike and stores
nothing: the form with a field error, the API with a 400, ``umbra submit`` before sending."""
from __future__ import annotations

import pytest
import yaml
from rest_framework.test import APIClient

from runs.models import Run
from tests import factories
from tests.run_config_cases import form_data
from umbra.client.errors import UsageError
from umbra.client.submission import load_submission, local_errors

pytestmark = pytest.mark.django_db
ONE_ITERATION = {"model": "tiny", "val_fraction": 0.25, "val_before_train": True, "val_every": 1, "iterations": 1}


@pytest.fixture
def member():
    team = factories.team("alpha")
    return team, factories.member(team, "doors")


def _yaml_paste(client, member, text):
    client.force_login(member[1])
    return client.post(f"/teams/{member[0].slug}/runs/new/", {"experiment": "e", "config_yaml": text})


def _api(member, body, **kwargs):
    api = APIClient()
    api.force_authenticate(member[1])
    return api.post("/api/runs/", body, **kwargs)


@pytest.mark.parametrize("line", ["spec_decoding: 0", "val_before_train: 'no'", "seer_divided: 'off'",
                                  "gradient_checkpointing: 1"])
def test_a_yaml_flag_that_is_not_true_or_false_is_refused_by_the_form_as_by_the_cli(client, member, tmp_path, line):
    resp = _yaml_paste(client, member, f"model: tiny\nval_fraction: 0.25\n{line}\n")
    assert resp.status_code == 400
    field = line.split(":")[0]
    assert f"field {field} in YAML must be true or false" in resp.context["form"].errors["config_yaml"][0]
    path = tmp_path / "run.yaml"
    path.write_text(f"team: alpha\nexperiment: e\nmodel: tiny\nval_fraction: 0.25\n{line}\n")
    assert any(f == field and "valid boolean" in m for f, m in local_errors(load_submission(str(path)).config))
    assert not Run.objects.exists()


@pytest.mark.parametrize("line, field", [("iterations: '3'", "iterations"), ("learning_rate: '1e-6'", "learning_rate"),
                                         ("model: !!binary aGVsbG8=", "model")])
def test_a_yaml_value_of_the_wrong_type_is_refused_by_the_form_as_by_the_cli(client, member, tmp_path, line, field):
    base = "val_fraction: 0.25\n" + ("" if field == "model" else "model: tiny\n")
    resp = _yaml_paste(client, member, f"{base}{line}\n")
    assert resp.status_code == 400
    assert f"field {field} in YAML: input should be a valid" in resp.context["form"].errors["config_yaml"][0]
    assert not Run.objects.exists()


def test_yaml_flags_written_as_yaml_booleans_still_load(client, member):
    resp = _yaml_paste(client, member, "model: tiny\nval_fraction: 0.25\nval_before_train: yes\nseer_divided: off\n")
    assert resp.status_code == 302, resp.context["form"].errors
    assert Run.objects.get().config["val_before_train"] is True and Run.objects.get().config["seer_divided"] is False


@pytest.mark.parametrize("text", ['model: "ti\\ud800ny"', 'dataset: "/data/\\udfff.jsonl"', 'experiment: "\\ud800"',
                                  'cluster: "\\ud800"'])
def test_a_lone_surrogate_in_pasted_yaml_is_a_form_error_not_a_500(client, member, text):
    resp = _yaml_paste(client, member, text)
    assert resp.status_code == 400
    assert "lone surrogate" in resp.context["form"].errors["config_yaml"][0]
    assert not Run.objects.exists()


@pytest.mark.parametrize("config, field", [
    ('{"model": "\\ud800"}', "model"), ('{"model": "tiny", "dataset": "/x/\\ud800.jsonl"}', "dataset"),
    ('{"model": "tiny", "reward": "\\udfff.py:f"}', "reward"), ('{"model": "tiny", "val_dataset": "\\ud800"}', "val_dataset"),
    ('{"model": "tiny", "\\ud800": 1}', "\\\\ud800"),
])
def test_a_lone_surrogate_in_the_api_config_is_a_400_naming_the_field(member, config, field):
    resp = _api(member, f'{{"team": "alpha", "experiment": "e", "config": {config}}}', content_type="application/json")
    assert resp.status_code == 400, resp.content[:200]
    errors = resp.json()["config"]
    assert any("lone surrogate" in m for m in errors[field.replace("\\\\", "\\")]), errors
    assert not Run.objects.exists()


def test_val_before_train_on_a_one_iteration_run_is_refused_at_every_door(client, member, yaml_file):
    client.force_login(member[1])
    form = client.post(f"/teams/{member[0].slug}/runs/new/", form_data(ONE_ITERATION))
    assert form.status_code == 400 and "a run of 1 iteration" in form.context["form"].errors["iterations"][0]
    paste = _yaml_paste(client, member, yaml.safe_dump(ONE_ITERATION))
    assert paste.status_code == 400 and "a run of 1 iteration" in paste.context["form"].errors["iterations"][0]
    api = _api(member, {"team": "alpha", "experiment": "e", "config": ONE_ITERATION}, format="json")
    assert api.status_code == 400 and "a run of 1 iteration" in api.json()["config"]["iterations"][0]
    assert [f for f, m in local_errors(load_submission(yaml_file(ONE_ITERATION)).config)
            if "a run of 1 iteration" in m] == ["iterations"]
    assert not Run.objects.exists()
    # validating only the initial weights, or validating a longer run from step 0, is taken everywhere
    for ok in ({**ONE_ITERATION, "val_every": 0}, {**ONE_ITERATION, "iterations": 2}):
        assert _api(member, {"team": "alpha", "experiment": "e", "config": ok}, format="json").status_code == 201
        assert local_errors(load_submission(yaml_file(ok)).config) == []


def test_the_cli_refuses_a_lone_surrogate_before_sending(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text('team: alpha\nexperiment: e\nmodel: "\\ud800"\n')
    with pytest.raises(UsageError, match="lone surrogate"):
        load_submission(str(path))
