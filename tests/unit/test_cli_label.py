"""``umbra label``: the PATCH body from the flags, and nothing sent without a change."""
import argparse

import pytest

from umbra.client.commands import label
from umbra.client.errors import EXIT_USAGE, CliError


def _args(argv):
    parser = argparse.ArgumentParser()
    label.add_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(["label", *argv])


def test_body_has_only_what_was_given():
    assert label.body(_args(["3", "--name", "fast", "--tag", "a", "--tag", "b"])) == {"name": "fast", "tags": ["a", "b"]}
    assert label.body(_args(["3", "--clear-tags", "--note", ""])) == {"tags": [], "note": ""}


def test_nothing_to_change_is_a_usage_error():
    with pytest.raises(CliError) as err:
        label.body(_args(["3"]))
    assert err.value.exit_code == EXIT_USAGE and "nothing to change" in err.value.message
