"""Run configs at and beyond every bound, through every door: the HTML form, the REST API
and the CLI's YAML file. The cases are derived from ``RunConfig``'s field metadata, so a new
field (or a changed bound) is tested without editing this file.

Per numeric field: its minimum and maximum are accepted, one step below the minimum and one
above the maximum are refused; wrong types are refused; per ``Literal`` field a value outside
it is refused. Cross-field bounds: prompts x group size, max_tokens vs the model's context.
A refused config gets an error naming the field and stores nothing."""
from __future__ import annotations

import math
import typing

import annotated_types as at
import pytest
import yaml
from rest_framework.test import APIClient

from runs.models import Experiment, Run
from teams.models import Membership, Team
from umbra import cli
from umbra.client.submission import load_submission, local_errors
from umbra.config import MAX_REQUESTS, PROMPT_BUDGET, RunConfig
from umbra.models.registry import NAMED_MODELS

# A small valid config: every field's extreme must fit beside it (prompts x group <= MAX_REQUESTS).
BASE = {"model": "tiny", "dataset": "arith", "prompts_per_iteration": 4, "group_size": 2, "max_tokens": 32,
        "iterations": 2}
# Caps that other fields of BASE put on a field below its own maximum.
EFFECTIVE_MAX = {"max_tokens": NAMED_MODELS[BASE["model"]] - PROMPT_BUDGET}
FIELDS = RunConfig.model_fields
NUMERIC = [n for n, f in FIELDS.items() if f.annotation in (int, float)]
LITERAL = [n for n, f in FIELDS.items() if typing.get_origin(f.annotation) is typing.Literal]
BOOLEAN = [n for n, f in FIELDS.items() if f.annotation is bool]
TEXT = [n for n, f in FIELDS.items() if f.annotation is str]


def _limits(name: str) -> tuple[float, float, float, float]:
    """``(lowest accepted, highest accepted, highest refused below, lowest refused above)``
    from the field's ge/gt/le/lt; floats step by one ulp, integers by one."""
    info = FIELDS[name]
    is_int = info.annotation is int
    step_up = (lambda v: v + 1) if is_int else (lambda v: math.nextafter(v, math.inf))
    step_down = (lambda v: v - 1) if is_int else (lambda v: math.nextafter(v, -math.inf))
    lo = hi = below = above = None
    for m in info.metadata:
        if isinstance(m, at.Ge):
            lo, below = m.ge, step_down(m.ge)
        elif isinstance(m, at.Gt):
            lo, below = step_up(m.gt), m.gt
        elif isinstance(m, at.Le):
            hi, above = m.le, step_up(m.le)
        elif isinstance(m, at.Lt):
            hi, above = step_down(m.lt), m.lt
    assert None not in (lo, hi), f"RunConfig.{name} needs both bounds (a config must be bounded)"
    return lo, min(hi, EFFECTIVE_MAX.get(name, hi)), below, above


def _wrong_types(name: str) -> list:
    """JSON-typed values of the wrong type for ``name`` (YAML gives the same types)."""
    ann = FIELDS[name].annotation
    if ann is int:
        return ["5", 1.5, 2.0, True, None, [1], {"v": 1}]
    if ann is float:
        return ["0.5", True, None, [0.5]]
    if ann is bool:
        return ["true", 1, None]
    return [5, True, ["x"]]  # str and Literal


ACCEPTED = [(n, v) for n in NUMERIC for v in sorted(set(_limits(n)[:2]))] + \
           [(n, v) for n in LITERAL for v in typing.get_args(FIELDS[n].annotation)] + \
           [(n, v) for n in BOOLEAN for v in (True, False)]
REFUSED = [(n, _limits(n)[2], "greater than") for n in NUMERIC] + \
          [(n, _limits(n)[3], "less than") for n in NUMERIC] + \
          [(n, v, "Input should be") for n in NUMERIC + BOOLEAN + LITERAL + TEXT for v in _wrong_types(n)] + \
          [(n, v, "Input should be") for n in LITERAL for v in ("fastest", "", "SEER", "oracle-lfs")] + \
          [(n, "x" * (FIELDS[n].metadata[0].max_length + 1), "") for n in TEXT]
# Cross-field: the largest per-iteration request count and each model's context.
PROMPTS_MAX = _limits("prompts_per_iteration")[1]
CROSS_ACCEPTED = [{"prompts_per_iteration": PROMPTS_MAX, "group_size": MAX_REQUESTS // PROMPTS_MAX}] + \
                 [{"model": m, "max_tokens": ctx - PROMPT_BUDGET} for m, ctx in NAMED_MODELS.items()]
CROSS_REFUSED = [({"prompts_per_iteration": PROMPTS_MAX, "group_size": MAX_REQUESTS // PROMPTS_MAX + 1},
                  "group_size", f"at most {MAX_REQUESTS}")] + \
                [({"model": m, "max_tokens": ctx - PROMPT_BUDGET + 1}, "max_tokens", f"exceeds what model '{m}'")
                 for m, ctx in NAMED_MODELS.items()]


def _id(value) -> str:
    return repr(value)[:30]


def test_every_field_is_covered():
    """Each RunConfig field is numeric (with both bounds), a Literal, a bool or a bounded text."""
    assert sorted(NUMERIC + LITERAL + BOOLEAN + TEXT) == sorted(FIELDS)
    assert "checkpoint_every" in NUMERIC and {n for n, *_ in REFUSED} == set(FIELDS)
    assert all(FIELDS[n].metadata and isinstance(FIELDS[n].metadata[0], at.MaxLen) for n in TEXT)


@pytest.fixture
def member(db):
    """A member of team 'alpha' (no password: nothing to hash per test)."""
    from django.contrib.auth import get_user_model

    team = Team.objects.create(name="Alpha", slug="alpha")
    user = get_user_model().objects.create_user("bounds")
    Membership.objects.create(user=user, team=team, role=Membership.Role.MEMBER)
    return team, user


# --- the HTML form ----------------------------------------------------------------------------


def _form_value(value) -> str:
    return repr(value) if isinstance(value, float) else str(value)


def _post_form(client, member, config: dict):
    team, user = member
    client.force_login(user)
    data = {"experiment": "bounds", **{k: _form_value(v) for k, v in config.items() if not isinstance(v, bool)}}
    data.update({k: "on" for k, v in config.items() if v is True})  # checkboxes: absent means False
    return client.post(f"/teams/{team.slug}/runs/new/", data)


def _assert_form_refused(resp, field: str, needle: str):
    assert resp.status_code == 400, resp.status_code
    errors = resp.context["form"].errors
    assert field in errors, errors
    assert needle in " ".join(errors[field]), errors[field]
    assert Run.objects.count() == 0 and Experiment.objects.count() == 0


# Text a form field may hold that no schema type reads: not numbers, not choices, too long.
FORM_REFUSED = [(n, v, "greater than") for n in NUMERIC for v in [_limits(n)[2]]] + \
               [(n, v, "less than") for n in NUMERIC for v in [_limits(n)[3]]] + \
               [(n, v, "valid number" if FIELDS[n].annotation is float else "valid integer")
                for n in NUMERIC for v in (["abc", "1.5", "0x10", "1e3"] if FIELDS[n].annotation is int else ["hot", "1,5"])] + \
               [(n, "1" * 501, "at most 500 characters") for n in NUMERIC[:1]] + \
               [(n, v, "valid choice") for n in LITERAL for v in ("fastest", "SEER")] + \
               [(n, "x" * (FIELDS[n].metadata[0].max_length + 1), "") for n in TEXT]


@pytest.mark.parametrize("field,value", [(n, v) for n, v in ACCEPTED], ids=_id)
def test_form_accepts_each_bound(client, member, field, value):
    resp = _post_form(client, member, {**BASE, field: value})
    assert resp.status_code == 302, resp.context["form"].errors if resp.status_code == 400 else resp.status_code
    assert Run.objects.get().config[field] == value


@pytest.mark.parametrize("field,value,needle", FORM_REFUSED, ids=_id)
def test_form_refuses_past_each_bound_with_a_field_error(client, member, field, value, needle):
    _assert_form_refused(_post_form(client, member, {**BASE, field: value}), field, needle)


@pytest.mark.parametrize("field", [n for n in NUMERIC if FIELDS[n].annotation is float])
@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e400"])
def test_form_refuses_non_finite_numbers(client, member, field, value):
    _assert_form_refused(_post_form(client, member, {**BASE, field: value}), field, "")


@pytest.mark.parametrize("changes", CROSS_ACCEPTED, ids=_id)
def test_form_accepts_cross_field_limits(client, member, changes):
    assert _post_form(client, member, {**BASE, **changes}).status_code == 302


@pytest.mark.parametrize("changes,field,needle", CROSS_REFUSED, ids=_id)
def test_form_refuses_past_cross_field_limits(client, member, changes, field, needle):
    _assert_form_refused(_post_form(client, member, {**BASE, **changes}), field, needle)


# --- the REST API ------------------------------------------------------------------------------


def _post_api(member, config: dict):
    team, user = member
    api = APIClient()
    api.force_authenticate(user)
    return api.post("/api/runs/", {"team": team.slug, "experiment": "bounds", "config": config}, format="json")


def _assert_api_refused(resp, field: str, needle: str):
    assert resp.status_code == 400, resp.content[:300]
    errors = resp.json()["config"]
    assert field in errors, errors
    assert needle in " ".join(errors[field]), errors[field]
    assert Run.objects.count() == 0 and Experiment.objects.count() == 0


@pytest.mark.parametrize("field,value", ACCEPTED, ids=_id)
def test_api_accepts_each_bound(member, field, value):
    resp = _post_api(member, {**BASE, field: value})
    assert resp.status_code == 201, resp.content[:300]
    assert resp.json()["config"][field] == value and Run.objects.get().config[field] == value


@pytest.mark.parametrize("field,value,needle", REFUSED, ids=_id)
def test_api_refuses_past_each_bound_naming_the_field(member, field, value, needle):
    _assert_api_refused(_post_api(member, {**BASE, field: value}), field, needle)


@pytest.mark.parametrize("changes", CROSS_ACCEPTED, ids=_id)
def test_api_accepts_cross_field_limits(member, changes):
    assert _post_api(member, {**BASE, **changes}).status_code == 201


@pytest.mark.parametrize("changes,field,needle", CROSS_REFUSED, ids=_id)
def test_api_refuses_past_cross_field_limits(member, changes, field, needle):
    _assert_api_refused(_post_api(member, {**BASE, **changes}), field, needle)


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


@pytest.fixture
def yaml_file(tmp_path, monkeypatch):
    """Writes a submission file; the CLI is logged in nowhere, so any request would fail."""
    monkeypatch.setenv("UMBRA_CONFIG_DIR", str(tmp_path / "cfg"))
    monkeypatch.delenv("UMBRA_URL", raising=False)
    monkeypatch.delenv("UMBRA_TOKEN", raising=False)

    def write(config: dict) -> str:
        path = tmp_path / "run.yaml"
        path.write_text(yaml.safe_dump({"team": "alpha", "experiment": "bounds", **config}))
        return str(path)
    return write


def _assert_yaml_refused(path: str, field: str, needle: str, capsys):
    assert cli.main(["submit", path]) == 2
    err = capsys.readouterr().err
    line = next((ln for ln in err.splitlines() if f"{field}: " in ln), None)
    assert line is not None, err
    assert needle in line, err


@pytest.mark.parametrize("field,value", ACCEPTED, ids=_id)
def test_yaml_accepts_each_bound_and_the_server_agrees(member, yaml_file, field, value):
    sub = load_submission(yaml_file({**BASE, field: value}))
    assert local_errors(sub.config) == []
    resp = _post_api(member, sub.config)  # what `umbra submit` sends
    assert resp.status_code == 201, resp.content[:300]
    assert Run.objects.get().config[field] == value


@pytest.mark.parametrize("field,value,needle", REFUSED, ids=_id)
def test_yaml_refuses_past_each_bound_naming_the_field(yaml_file, capsys, field, value, needle):
    _assert_yaml_refused(yaml_file({**BASE, field: value}), field, needle if not isinstance(value, (list, dict)) else
                         "expected a number, string or true/false", capsys)


@pytest.mark.parametrize("text,field,needle", [
    ("learning_rate: 1e-6\n", None, None),  # YAML 1.1 would read a string here
    ("learning_rate: 2e0\n", "learning_rate", "less than or equal to 1"),
    ("temperature: .nan\n", "temperature", "less than or equal to 2"),
    ("kl_coef: -.inf\n", "kl_coef", "greater than or equal to 0"),
    ("iterations: 0x10\n", None, None),  # YAML hex: 16
    ("seed: 2020-01-01\n", "seed", "expected a number, string or true/false"),
    ("group_size: '8'\n", "group_size", "valid integer"),
    ("spec_decoding: yes\n", None, None),  # YAML 1.1 boolean
])
def test_yaml_spellings(member, tmp_path, monkeypatch, capsys, text, field, needle):
    monkeypatch.setenv("UMBRA_CONFIG_DIR", str(tmp_path / "cfg"))
    path = tmp_path / "run.yaml"
    path.write_text("team: alpha\nexperiment: e\nmodel: tiny\n" + text)
    if field is None:
        sub = load_submission(str(path))
        assert local_errors(sub.config) == [] and _post_api(member, sub.config).status_code == 201
    else:
        _assert_yaml_refused(str(path), field, needle, capsys)


@pytest.mark.parametrize("changes", CROSS_ACCEPTED, ids=_id)
def test_yaml_accepts_cross_field_limits(yaml_file, changes):
    assert local_errors(load_submission(yaml_file({**BASE, **changes})).config) == []


@pytest.mark.parametrize("changes,field,needle", CROSS_REFUSED, ids=_id)
def test_yaml_refuses_past_cross_field_limits(yaml_file, capsys, changes, field, needle):
    _assert_yaml_refused(yaml_file({**BASE, **changes}), field, needle, capsys)
