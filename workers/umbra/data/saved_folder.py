"""Check a ``save_to_disk`` folder before Hugging Face ``datasets`` reads it (ours).

``datasets.load_from_disk`` joins the names a folder's JSON holds to the folder's path without
checking them: a DatasetDict's split names (``dataset_dict.json``) and each Dataset's Arrow
files (``state.json``, ``_data_files[].filename``). A name holding ``../`` or an absolute path, or
a symlink, would make it read a data set outside the folder; :func:`check_saved_folder`
refuses such a folder first, reading only the folder's own JSON.
"""
from __future__ import annotations

import json
from pathlib import Path

from umbra.data.gsm8k import DatasetError

DATASET_DICT_JSON = "dataset_dict.json"  # datasets.config.DATASETDICT_JSON_FILENAME
STATE_JSON = "state.json"  # datasets.config.DATASET_STATE_JSON_FILENAME
INFO_JSON = "dataset_info.json"  # datasets.config.DATASET_INFO_FILENAME
MAX_JSON_BYTES = 1 << 20  # these files list names; a larger one is not datasets'


def _plain_name(name, what: str, folder: Path) -> str:
    """``name`` if it names an entry of a folder (no separator, not ``.``/``..``, not absolute)."""
    if not isinstance(name, str) or not name or name in (".", "..") or "/" in name or "\\" in name \
            or "\x00" in name or Path(name).is_absolute():
        raise DatasetError(f"{folder}: {what} {str(name)[:100]!r} is not a plain name inside the folder "
                           "(refused: it would read outside the folder)")
    return name


def _inside(path: Path, root: Path, folder: Path) -> Path:
    """``path`` if it lies inside ``root`` once symlinks are resolved."""
    try:
        real = path.resolve()
    except (OSError, RuntimeError):  # a symlink loop
        real = None
    if real is None or not real.is_relative_to(root):
        raise DatasetError(f"{folder}: {path.relative_to(folder)} leads outside the folder (a symlink?); refused")
    return path


def _json(path: Path, root: Path, folder: Path) -> dict:
    _inside(path, root, folder)
    try:
        if not path.is_file():  # a FIFO would block the read; a directory or device is not datasets' JSON
            raise ValueError("not a regular file" if path.exists() else "missing")
        if path.stat().st_size > MAX_JSON_BYTES:
            raise ValueError(f"larger than {MAX_JSON_BYTES // 2**20} MiB")
        doc = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(doc, dict):
            raise ValueError("not a JSON object")
        return doc
    except (OSError, ValueError, RecursionError) as exc:
        raise DatasetError(f"{folder}: not a folder written by datasets' save_to_disk "
                           f"({path.name}: {str(exc)[:200]})") from None


def _check_dataset(path: Path, root: Path, folder: Path) -> None:
    """One Dataset folder: its JSON files and every Arrow file its ``state.json`` lists inside ``root``."""
    _inside(path, root, folder)
    _inside(path / INFO_JSON, root, folder)
    files = _json(path / STATE_JSON, root, folder).get("_data_files")
    if not isinstance(files, list):
        raise DatasetError(f"{folder}: {STATE_JSON} lists no data files (not written by datasets' save_to_disk)")
    for entry in files:
        name = entry.get("filename") if isinstance(entry, dict) else None
        _inside(path / _plain_name(name, "data file", folder), root, folder)


def check_saved_folder(folder: Path) -> None:
    """Refuse a ``save_to_disk`` folder that would make ``datasets.load_from_disk`` read outside
    it. Raises DatasetError naming the bad split or file; a folder of neither kind passes
    (``datasets`` then says what it lacks)."""
    root = folder.resolve()
    if (folder / INFO_JSON).is_file() and (folder / STATE_JSON).is_file():  # load_from_disk's order
        _check_dataset(folder, root, folder)
    elif (folder / DATASET_DICT_JSON).is_file():
        splits = _json(folder / DATASET_DICT_JSON, root, folder).get("splits")
        if not isinstance(splits, list):
            raise DatasetError(f"{folder}: {DATASET_DICT_JSON} lists no splits (not written by datasets' save_to_disk)")
        for split in splits:
            _check_dataset(folder / _plain_name(split, "split name", folder), root, folder)
