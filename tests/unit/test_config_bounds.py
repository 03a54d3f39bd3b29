"""Every ``RunConfig`` bound (tests/run_config_cases.py), checked once without a database
through what each door runs: ``check_config`` (the API's strict JSON check, and the
server's answer to ``umbra submit``), ``RunForm`` (form text, converted, then
``check_config``) and ``umbra submit``'s local check of the YAML file. Each door refuses
with an error naming the field. That the form view, the API view and the CLI really use
these, and show their errors, is tests/platform/test_config_doors.py."""
from __future__ import annotations

import annotated_types as at
import pytest

from runs.config_check import check_config
from runs.forms import RunForm
from tests.run_config_cases import (ACCEPTED, BASE, BOOLEAN, CROSS_ACCEPTED, CROSS_REFUSED, FIELDS, FLOATS,
                                    FORM_REFUSED, LITERAL, NON_FINITE_TEXT, NUMERIC, REFUSED, TEXT, form_data)
from umbra import cli
from umbra.client.submission import load_submission, local_errors


def test_every_field_is_covered():
    """Each RunConfig field is numeric (with both bounds), a Literal, a bool or a bounded text."""
    assert sorted(NUMERIC + LITERAL + BOOLEAN + TEXT) == sorted(FIELDS)
    assert "checkpoint_every" in NUMERIC and {n for n, *_ in REFUSED} == set(FIELDS)
    assert all(FIELDS[n].metadata and isinstance(FIELDS[n].metadata[0], at.MaxLen) for n in TEXT)


def _assert_checked(config: dict, field: str, value) -> None:
    """``check_config`` in the API's strict mode accepts ``config`` as given."""
    checked, errors = check_config(config, strict=True)
    assert errors == {} and getattr(checked, field) == value, errors


def _assert_refused(errors: dict, field: str, needle: str) -> None:
    assert field in errors, errors
    assert needle in " ".join(errors[field]), errors[field]


def _form(config: dict) -> RunForm:
    form = RunForm(data=form_data(config))
    form.is_valid()
    return form


def _assert_cli_refused(path: str, field: str, needle: str, capsys) -> None:
    assert cli.main(["submit", path]) == 2
    err = capsys.readouterr().err
    line = next((ln for ln in err.splitlines() if f"{field}: " in ln), None)
    assert line is not None, err
    assert needle in line, err


def _by_field(cases) -> dict[str, list[tuple]]:
    """``{field: [(value, ...), ...]}`` from ``(field, value, ...)`` cases, in field order."""
    out: dict[str, list[tuple]] = {}
    for name, *rest in cases:
        out.setdefault(name, []).append(tuple(rest))
    return out


ACCEPTED_BY, REFUSED_BY = _by_field(ACCEPTED), _by_field(REFUSED)
FORM_REFUSED_BY = _by_field(FORM_REFUSED + [(n, v, "") for n in FLOATS for v in NON_FINITE_TEXT])


# --- at each bound: accepted by every door ---------------------------------------------------


@pytest.mark.parametrize("field", ACCEPTED_BY)
def test_every_door_accepts_each_bound_of(field, subtests, yaml_file):
    for (value,) in ACCEPTED_BY[field]:
        config = {**BASE, field: value}
        with subtests.test("api", value=value):
            _assert_checked(config, field, value)
        with subtests.test("form", value=value):
            form = _form(config)
            assert form.errors == {}
            assert form.cleaned_data["config"].model_dump()[field] == value
        with subtests.test("cli", value=value):
            sub = load_submission(yaml_file(config))
            assert local_errors(sub.config) == []
            _assert_checked(sub.config, field, value)  # what `umbra submit` sends: the server's check agrees


def test_every_door_accepts_the_cross_field_limits(subtests, yaml_file):
    for changes in CROSS_ACCEPTED:
        with subtests.test(changes=changes):
            config = {**BASE, **changes}
            assert check_config(config, strict=True)[1] == {}
            assert _form(config).errors == {}
            assert local_errors(load_submission(yaml_file(config)).config) == []


# --- past each bound: refused, naming the field ----------------------------------------------


@pytest.mark.parametrize("field", REFUSED_BY)
def test_the_api_check_and_the_cli_refuse_past_each_bound_of(field, subtests, yaml_file, capsys):
    """JSON (API) and YAML (CLI) values: past the bounds, of the wrong type, outside a Literal."""
    for value, needle in REFUSED_BY[field]:
        with subtests.test("api", value=value):
            config, errors = check_config({**BASE, field: value}, strict=True)
            assert config is None
            _assert_refused(errors, field, needle)
        with subtests.test("cli", value=value):
            _assert_cli_refused(yaml_file({**BASE, field: value}), field, needle if not isinstance(value, (list, dict))
                                else "expected a number, string or true/false", capsys)


@pytest.mark.parametrize("field", FORM_REFUSED_BY)
def test_the_form_refuses_past_each_bound_of(field, subtests):
    """Form text: past the bounds, not a number (nor a finite one), not a choice, too long."""
    for value, needle in FORM_REFUSED_BY[field]:
        with subtests.test(value=value):
            form = _form({**BASE, field: value})
            assert "config" not in form.cleaned_data
            _assert_refused(form.errors, field, needle)


def test_every_door_refuses_past_the_cross_field_limits(subtests, yaml_file, capsys):
    for changes, field, needle in CROSS_REFUSED:
        with subtests.test(changes=changes):
            config = {**BASE, **changes}
            _assert_refused(check_config(config, strict=True)[1], field, needle)
            _assert_refused(_form(config).errors, field, needle)
            _assert_cli_refused(yaml_file(config), field, needle, capsys)


# --- YAML spellings: what the CLI reads, the server's check reads alike -----------------------


@pytest.mark.parametrize("text,field,needle", [
    ("learning_rate: 1e-6\n", None, None),  # YAML 1.1 would read a string here
    ("learning_rate: 2e0\n", "learning_rate", "less than or equal to 1"),
    ("temperature: .nan\n", "temperature", "finite number"),
    ("kl_coef: -.inf\n", "kl_coef", "finite number"),
    ("iterations: 0x10\n", None, None),  # YAML hex: 16
    ("seed: 2020-01-01\n", "seed", "expected a number, string or true/false"),
    ("group_size: '8'\n", "group_size", "valid integer"),
    ("spec_decoding: yes\n", None, None),  # YAML 1.1 boolean
])
def test_yaml_spellings(tmp_path, monkeypatch, capsys, text, field, needle):
    monkeypatch.setenv("UMBRA_CONFIG_DIR", str(tmp_path / "cfg"))
    path = tmp_path / "run.yaml"
    path.write_text("team: alpha\nexperiment: e\nmodel: tiny\n" + text)
    if field is None:
        sub = load_submission(str(path))
        assert local_errors(sub.config) == [] and check_config(sub.config, strict=True)[1] == {}
    else:
        _assert_cli_refused(str(path), field, needle, capsys)
