"""Hostile ``save_to_disk`` folders (umbra.data.saved_folder): split names and Arrow file names
holding ``../`` or an absolute path, or a symlink out, are refused before ``datasets`` reads them,
so a data set outside the folder is never read. Real folders written by Hugging Face datasets."""
from __future__ import annotations

import json

import datasets
import pytest

from umbra.data.files import load_file
from umbra.data.gsm8k import DatasetError

SECRET = [{"question": "secret question outside the folder", "answer": "#### 1"}]
ROWS = [{"question": "What is 1 + 1?", "answer": "#### 2"}]


@pytest.fixture
def outside(tmp_path):
    """A valid Dataset folder next to the uploaded one: what a hostile name points at."""
    path = tmp_path / "outside"
    datasets.Dataset.from_list(SECRET).save_to_disk(str(path))
    return path


def _dataset_dict(tmp_path):
    folder = tmp_path / "upload"
    datasets.DatasetDict({"train": datasets.Dataset.from_list(ROWS)}).save_to_disk(str(folder))
    return folder


def _set_splits(folder, splits):
    (folder / "dataset_dict.json").write_text(json.dumps({"splits": splits}))


def test_a_dataset_dict_as_written_loads(tmp_path):
    assert load_file(_dataset_dict(tmp_path)).problems[0].answer == "2"


@pytest.mark.parametrize("split", ["../outside", "train/../../outside", "ABSOLUTE", "..", "", 3])
def test_a_split_name_that_leaves_the_folder_is_refused(tmp_path, outside, split):
    folder = _dataset_dict(tmp_path)
    if split == "../outside":  # datasets itself reads it: the secret row came back before the check
        _set_splits(folder, [split])
        assert datasets.load_from_disk(str(folder))[split][0]["question"] == SECRET[0]["question"]
    _set_splits(folder, ["train", str(outside) if split == "ABSOLUTE" else split])
    with pytest.raises(DatasetError, match="split name .* is not a plain name inside the folder") as err:
        load_file(folder)
    assert "secret" not in str(err.value)


def test_a_data_file_name_that_leaves_the_folder_is_refused(tmp_path, outside):
    folder = tmp_path / "upload"
    datasets.Dataset.from_list(ROWS).save_to_disk(str(folder))
    state = json.loads((folder / "state.json").read_text())
    state["_data_files"] = [{"filename": "../outside/data-00000-of-00001.arrow"}]
    (folder / "state.json").write_text(json.dumps(state))
    with pytest.raises(DatasetError, match="data file .* is not a plain name"):
        load_file(folder)
    split = _dataset_dict(tmp_path / "dict")  # the same inside a DatasetDict's split
    (split / "train" / "state.json").write_text(json.dumps(state))
    with pytest.raises(DatasetError, match="data file .* is not a plain name"):
        load_file(split)


def test_a_split_that_is_a_symlink_out_of_the_folder_is_refused(tmp_path, outside):
    folder = _dataset_dict(tmp_path)
    (folder / "linked").symlink_to(outside, target_is_directory=True)
    _set_splits(folder, ["linked"])
    with pytest.raises(DatasetError, match="linked leads outside the folder"):
        load_file(folder)


def test_a_dataset_dict_json_that_is_not_datasets_is_a_clear_error(tmp_path):
    folder = _dataset_dict(tmp_path)
    (folder / "dataset_dict.json").write_text('{"splits": "train"}')
    with pytest.raises(DatasetError, match="lists no splits"):
        load_file(folder)
    (folder / "dataset_dict.json").write_text("[[[")
    with pytest.raises(DatasetError, match="not a folder written by datasets' save_to_disk"):
        load_file(folder)


@pytest.mark.parametrize("entry", ["FIFO", "DIR"])
def test_a_split_state_json_that_is_no_regular_file_is_refused_without_blocking(tmp_path, entry):
    """A FIFO would block the read (in the web request that checks the submission) forever."""
    import os
    import time

    folder = _dataset_dict(tmp_path)
    state = folder / "train" / "state.json"
    state.unlink()
    os.mkfifo(state) if entry == "FIFO" else state.mkdir()
    start = time.monotonic()
    with pytest.raises(DatasetError, match=r"state.json: not a regular file"):
        load_file(folder)
    assert time.monotonic() - start < 5.0


@pytest.mark.parametrize("split", ["..\\outside", "TRAIN", "\u2024\u2024"])  # Windows separator, case, lookalike dots
def test_split_names_that_only_look_like_a_way_out_stay_inside(tmp_path, outside, split):
    folder = _dataset_dict(tmp_path)
    _set_splits(folder, [split])
    with pytest.raises(DatasetError) as err:
        load_file(folder)
    assert "secret" not in str(err.value)
