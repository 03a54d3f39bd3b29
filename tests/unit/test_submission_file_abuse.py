"""Hostile run config files for ``umbra submit FILE`` and ``manage.py umbra_demo --config FILE``
(umbra.client.submission): a device, a FIFO, a folder, a huge file, binary, NUL, a number of
5,000 digits or a lone surrogate escape are each one UsageError line, read within a second
and without reading more than the size limit."""
from __future__ import annotations

import os
import time

import pytest

from umbra.client.errors import UsageError
from umbra.client.submission import load_submission
from umbra.config_yaml import MAX_YAML_BYTES


@pytest.mark.parametrize("path, needle", [("/dev/zero", "not a regular file"), ("/dev/null", "not a regular file")])
def test_a_device_is_refused_without_reading_it(path, needle):
    with pytest.raises(UsageError, match=needle):
        load_submission(path)


def test_a_fifo_and_a_folder_are_refused_without_blocking(tmp_path):
    os.mkfifo(tmp_path / "fifo.yaml")  # opening it for reading would wait for a writer forever
    start = time.monotonic()
    for path in (tmp_path / "fifo.yaml", tmp_path):
        with pytest.raises(UsageError, match="not a regular file"):
            load_submission(str(path))
    assert time.monotonic() - start < 1.0


@pytest.mark.parametrize("content, needle", [
    (b"model: tiny\n#" + b"x" * MAX_YAML_BYTES, "longer than 64 KiB"),
    (b"model: \xff\xfe tiny\n", r"not UTF-8 text \(byte 8\)"),
    (b"model: tiny\x00\n", r"character 12\): U\+0000 is not allowed"),
    (b"seed: " + b"9" * 5000 + b"\n", "invalid YAML: Exceeds the limit"),
    (b'model: "ti\\ud800ny"\n', r"lone surrogate \\ud800"),
    (b'"\\udfff": 1\n', r"lone surrogate \\udfff"),
])
def test_a_hostile_file_is_one_usage_error_line(tmp_path, content, needle):
    path = tmp_path / "hostile.yaml"
    path.write_bytes(content)
    with pytest.raises(UsageError, match=needle) as err:
        load_submission(str(path))
    assert "\n" not in str(err.value)
