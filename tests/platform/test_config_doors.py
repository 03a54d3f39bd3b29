"""Each door a run config comes through (the HTML form, the REST API, ``umbra submit``'s
YAML file) asks ``check_config``, shows its refusal the door's way (a field error, a 400
naming the field, one CLI line per field) and then stores nothing. Every bound itself is
tests/unit/test_config_bounds.py."""
from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from runs import config_check
from runs.models import Experiment, Run
from tests import factories
from tests.run_config_cases import BASE, form_data, form_value, limits
from umbra import cli
from umbra.client.submission import load_submission, local_errors

pytestmark = pytest.mark.django_db
HIGHEST_TEMPERATURE, PAST_TEMPERATURE = limits("temperature")[1], limits("temperature")[3]
SENTINEL = "refused by the one check"


@pytest.fixture
def member():
    """A member of team 'alpha' (no password: nothing to hash per test)."""
    team = factories.team("alpha")
    return team, factories.member(team, "bounds")


@pytest.fixture
def check_refuses(monkeypatch):
    """``check_config`` refuses every config with SENTINEL on ``temperature``; records its calls."""
    calls = []

    def refuse(values, strict=False, team=None):
        calls.append((dict(values), strict))
        return None, {"temperature": [SENTINEL]}
    for module in ("runs.forms", "api.views.runs"):
        monkeypatch.setattr(f"{module}.check_config", refuse)
    return calls


def _assert_nothing_stored():
    assert Run.objects.count() == 0 and Experiment.objects.count() == 0


# --- the HTML form ----------------------------------------------------------------------------


def _post_form(client, member, config: dict):
    team, user = member
    client.force_login(user)
    return client.post(f"/teams/{team.slug}/runs/new/", form_data(config))


def test_the_form_stores_a_config_at_a_bound(client, member):
    resp = _post_form(client, member, {**BASE, "temperature": HIGHEST_TEMPERATURE})
    assert resp.status_code == 302, resp.context["form"].errors if resp.status_code == 400 else resp.status_code
    assert Run.objects.get().config["temperature"] == HIGHEST_TEMPERATURE


def test_the_form_shows_a_refused_bound_as_a_field_error_and_stores_nothing(client, member):
    resp = _post_form(client, member, {**BASE, "temperature": PAST_TEMPERATURE})
    assert resp.status_code == 400
    assert "less than or equal to 2" in " ".join(resp.context["form"].errors["temperature"])
    _assert_nothing_stored()


def test_the_form_asks_check_config(client, member, check_refuses):
    resp = _post_form(client, member, {**BASE, "temperature": HIGHEST_TEMPERATURE})
    assert resp.status_code == 400 and resp.context["form"].errors["temperature"] == [SENTINEL]
    (values, strict), = check_refuses  # asked once, with the form's text (converted by the schema)
    assert values["temperature"] == form_value(HIGHEST_TEMPERATURE) and strict is False
    _assert_nothing_stored()


# --- the REST API ------------------------------------------------------------------------------


def _post_api(member, config):
    team, user = member
    api = APIClient()
    api.force_authenticate(user)
    return api.post("/api/runs/", {"team": team.slug, "experiment": "bounds", "config": config}, format="json")


def test_the_api_stores_a_config_at_a_bound(member):
    resp = _post_api(member, {**BASE, "temperature": HIGHEST_TEMPERATURE})
    assert resp.status_code == 201, resp.content[:300]
    assert resp.json()["config"]["temperature"] == HIGHEST_TEMPERATURE
    assert Run.objects.get().config["temperature"] == HIGHEST_TEMPERATURE


def test_the_api_answers_a_refused_bound_with_400_naming_the_field_and_stores_nothing(member):
    resp = _post_api(member, {**BASE, "temperature": PAST_TEMPERATURE})
    assert resp.status_code == 400, resp.content[:300]
    assert "less than or equal to 2" in " ".join(resp.json()["config"]["temperature"])
    _assert_nothing_stored()


def test_the_api_asks_check_config_strictly(member, check_refuses):
    resp = _post_api(member, {**BASE, "temperature": HIGHEST_TEMPERATURE})
    assert resp.status_code == 400 and resp.json() == {"config": {"temperature": [SENTINEL]}}
    assert check_refuses == [({**BASE, "temperature": HIGHEST_TEMPERATURE}, True)]
    _assert_nothing_stored()


@pytest.mark.parametrize("raw", ['{"team": "alpha", "experiment": "e", "config": {"temperature": NaN}}',
                                 '{"team": "alpha", "experiment": "e", "config": {"iterations": 1e999}}',
                                 '{"team": "alpha", "experiment": "e", "config": {"seed": ' + "9" * 5000 + "}}",
                                 '{"team": "alpha", "experiment": "e", "config": [1]}',
                                 '{"team": "alpha", "experiment": "e", "config": "x"}'])
def test_api_refuses_non_json_numbers_and_non_objects(member, raw):
    team, user = member
    api = APIClient()
    api.force_authenticate(user)
    resp = api.post("/api/runs/", raw, content_type="application/json")
    assert resp.status_code == 400 and resp.json()
    assert Run.objects.count() == 0


# --- the CLI's YAML file -----------------------------------------------------------------------


def test_what_the_cli_accepts_the_server_stores(member, yaml_file):
    sub = load_submission(yaml_file({**BASE, "temperature": HIGHEST_TEMPERATURE}))
    assert local_errors(sub.config) == []
    resp = _post_api(member, sub.config)  # what `umbra submit` sends
    assert resp.status_code == 201, resp.content[:300]
    assert Run.objects.get().config["temperature"] == HIGHEST_TEMPERATURE


def test_the_cli_prints_a_refused_bound_as_a_field_line_and_sends_nothing(member, yaml_file, capsys):
    assert cli.main(["submit", yaml_file({**BASE, "temperature": PAST_TEMPERATURE})]) == 2
    err = capsys.readouterr().err
    assert any("temperature: " in ln and "less than or equal to 2" in ln for ln in err.splitlines()), err
    _assert_nothing_stored()


def test_the_cli_checks_with_the_schema_check_config_uses(monkeypatch, yaml_file, capsys):
    """The CLI's local check and check_config both validate with ``umbra.config.RunConfig``,
    strictly: a RunConfig that refuses every max_tokens is refused by both, in the same words."""
    from pydantic import field_validator

    from umbra import config as umbra_config

    class Refusing(umbra_config.RunConfig):
        @field_validator("max_tokens")
        @classmethod
        def _refuse(cls, v):
            raise ValueError(SENTINEL)

    monkeypatch.setattr(umbra_config, "RunConfig", Refusing)
    monkeypatch.setattr(config_check, "RunConfig", Refusing)
    assert config_check.check_config(dict(BASE), strict=True)[1] == {"max_tokens": [SENTINEL]}
    assert cli.main(["submit", yaml_file(dict(BASE))]) == 2
    assert f"max_tokens: {SENTINEL}" in capsys.readouterr().err
