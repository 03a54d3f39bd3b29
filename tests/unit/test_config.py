import pytest
from pydantic import ValidationError

from umbra.config import RunConfig


def test_defaults_are_valid():
    cfg = RunConfig()
    assert cfg.rollout_policy == "static-group" and cfg.group_size == 8


@pytest.mark.parametrize("field,value,msg", [
    ("group_size", 1, "greater than or equal to 2"),
    ("max_tokens", 1000, "exceeds what model 'tiny' allows"),
    ("dataset", "/nope.jsonl", "unknown dataset"),
    ("model", "gpt-9", "unknown model"),
    ("temperature", "warm", "valid number"),
    ("rollout_policy", "fastest", "Input should be"),
])
def test_invalid_values_are_refused_with_a_message(field, value, msg):
    with pytest.raises(ValidationError, match=msg):
        RunConfig(**{"model": "tiny", field: value})


def test_unknown_keys_are_refused():
    with pytest.raises(ValidationError, match="Extra inputs"):
        RunConfig(model="tiny", gruop_size=4)
