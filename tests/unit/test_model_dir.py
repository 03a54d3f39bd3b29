"""Where named models are looked for: the platform's settings and `umbra prepare-model` agree
(a demo with UMBRA_VAR_DIR set built the model in one folder and looked in another)."""
from pathlib import Path

import pytest

from umbra.models.registry import model_dir, resolve_model


def test_model_dir_is_umbra_model_dir_else_under_umbra_var_dir(monkeypatch, tmp_path):
    monkeypatch.delenv("UMBRA_MODEL_DIR", raising=False)
    monkeypatch.setenv("UMBRA_VAR_DIR", str(tmp_path / "var"))
    assert model_dir() == tmp_path / "var" / "models"
    assert resolve_model("tiny") == tmp_path / "var" / "models" / "tiny"
    monkeypatch.setenv("UMBRA_MODEL_DIR", str(tmp_path / "m"))
    assert model_dir() == tmp_path / "m"
    monkeypatch.delenv("UMBRA_MODEL_DIR")
    monkeypatch.delenv("UMBRA_VAR_DIR")
    assert model_dir() == Path(__file__).resolve().parents[2] / "var" / "models"


def test_a_run_of_a_named_model_not_prepared_says_how_to_prepare_it(monkeypatch, tmp_path):
    from umbra.config import RunConfig
    from umbra.job.parts import start_parts

    monkeypatch.setenv("UMBRA_MODEL_DIR", str(tmp_path))
    with pytest.raises(ValueError, match=r"model 'tiny' is not prepared at .*umbra prepare-model tiny"):
        start_parts(RunConfig(model="tiny"))
