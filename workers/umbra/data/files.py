"""Read a data set file with Hugging Face ``datasets`` (not a parser of ours): JSONL/JSON
lines, Parquet (pyarrow), or a folder written by ``Dataset.save_to_disk``; the rows then go
to :mod:`umbra.data.shapes`, which recognises veRL's, TRL's or GSM8K's row shape."""
from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path

from umbra.data.gsm8k import MAX_FILE_BYTES, DatasetError
from umbra.data.problem import Problem
from umbra.data.saved_folder import check_saved_folder
from umbra.data.shapes import rows_to_problems

JSON_SUFFIXES = (".jsonl", ".json", ".ndjson")
PARQUET_SUFFIXES = (".parquet", ".pq")
SPLIT = "train"  # the split taken from a saved DatasetDict
# A Parquet file's data once decompressed (its footer says how much): the file size limit
# alone lets a 1 KB zstd file decode to gigabytes in the process that checks it.
MAX_DECODED_BYTES = 4 * MAX_FILE_BYTES
# Values in a Parquet file (list items count one each): each becomes a Python object of ~50
# bytes or more, so a file of a few KB holding lists of small values must not be read.
MAX_VALUES = 4_000_000


@dataclass(frozen=True)
class LoadedFile:
    """The problems of one file and the row shape found (``verl``, ``trl`` or ``gsm8k``)."""

    shape: str
    problems: list[Problem]


def is_dataset_path(name: str) -> bool:
    """Whether ``name`` is an existing file or folder (False for names the file system rejects)."""
    try:
        return bool(name) and Path(name).exists()
    except (OSError, ValueError):
        return False


def _size(p: Path) -> int:
    return sum(f.stat().st_size for f in p.rglob("*") if f.is_file()) if p.is_dir() else p.stat().st_size


def _first_bad_json_line(p: Path) -> str:
    """Where a JSON-lines file stops parsing, for the error message (pyarrow's own row
    count is per block and from 0)."""
    try:
        with p.open(encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if line.strip():
                    try:
                        obj = json.loads(line)
                    except (ValueError, RecursionError) as exc:
                        return f"line {n}: not JSON ({getattr(exc, 'msg', 'too deeply nested or too large')})"
                    if not isinstance(obj, dict):
                        return f"line {n}: not a JSON object (one row per line, columns as keys)"
    except UnicodeDecodeError:
        return "not UTF-8 text"
    return ""


def _unsafe_json(p: Path) -> str:
    """Why a JSON-lines file must not reach pyarrow's reader, or "": text that is not UTF-8
    (pyarrow keeps it and fails later, outside our errors) or a line nested too deeply
    (pyarrow's reader recurses without a limit: 20,000 open brackets kill the process)."""
    try:
        with p.open(encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                try:
                    json.loads(line)
                except RecursionError:
                    return f"line {n}: not JSON (too deeply nested or too large)"
                except ValueError:  # not JSON (or a multi-line document): datasets says so
                    pass
    except UnicodeDecodeError:
        return "not UTF-8 text"
    return ""


def _parquet_footer(p: Path) -> tuple[int, int, int] | None:
    """Rows, uncompressed bytes (all row groups' column data) and values (list items count
    one each) in a Parquet file's footer, or None when it has none that reads (datasets
    then says why)."""
    import pyarrow.parquet as pq

    try:
        meta = pq.read_metadata(p)
        groups = [meta.row_group(i) for i in range(meta.num_row_groups)]
        return (meta.num_rows, sum(g.total_byte_size for g in groups),
                sum(g.column(c).num_values for g in groups for c in range(g.num_columns)))
    except Exception:  # noqa: BLE001 -- pyarrow's errors for a file that is not Parquet
        return None


def _parquet_decodes_past(p: Path, limit: int) -> int:
    """Bytes of the file's rows once decoded, counted a row at a time up to just past
    ``limit`` (0 when the file does not read: datasets then says why). The footer's sizes are
    no bound: a dictionary-encoded column stores a repeated value once."""
    import pyarrow.parquet as pq

    total = 0
    try:
        for batch in pq.ParquetFile(p).iter_batches(batch_size=1):
            total += batch.nbytes
            if total > limit:
                break
    except Exception:  # noqa: BLE001 -- pyarrow's errors for a file that is not Parquet
        return 0
    return total


def _has_text(p: Path) -> bool:
    with p.open("rb") as fh:
        return any(line.strip() for line in fh)


def _read(p: Path, max_rows: int | None = None):
    """The ``datasets.Dataset`` in ``p``. Raises DatasetError for what ``datasets`` cannot read."""
    import datasets

    datasets.disable_progress_bars()
    datasets.logging.set_verbosity(datasets.logging.CRITICAL)  # our DatasetError says it once
    if p.is_dir():
        check_saved_folder(p)  # split and file names that would read outside the folder
        try:
            ds = datasets.load_from_disk(str(p), keep_in_memory=True)
        except Exception as exc:  # noqa: BLE001 -- a folder of anything: FileNotFoundError, JSON, Arrow errors
            raise DatasetError(f"{p}: not a folder written by datasets' save_to_disk ({str(exc)[:300]})") from None
        if isinstance(ds, datasets.DatasetDict):
            if SPLIT not in ds and len(ds) != 1:
                raise DatasetError(f"{p}: a DatasetDict without a '{SPLIT}' split (splits: {', '.join(ds)})")
            ds = ds[SPLIT] if SPLIT in ds else next(iter(ds.values()))
        return ds
    if not p.is_file():  # a FIFO would block the read (in a web request), a device never ends
        raise DatasetError(f"{p}: not a regular file or a save_to_disk folder")
    suffix = p.suffix.lower()
    if suffix not in JSON_SUFFIXES + PARQUET_SUFFIXES:
        raise DatasetError(f"{p}: unknown file type '{suffix}'; use .jsonl, .parquet or a save_to_disk folder")
    if suffix in JSON_SUFFIXES and not _has_text(p):
        raise DatasetError(f"{p}: no problems in the file")
    if suffix in JSON_SUFFIXES and (why := _unsafe_json(p)):
        raise DatasetError(f"{p}: cannot be read as JSON lines (a data set is a JSONL or Parquet file): {why}")
    rows, stored, values = (_parquet_footer(p) if suffix in PARQUET_SUFFIXES else None) or (None, 0, 0)
    if rows == 0:  # datasets' own message: "BatchSize must be greater than 0"
        raise DatasetError(f"{p}: no rows")
    if values > MAX_VALUES:  # a list of 100 M zeros is a few bytes of run-length encoding
        raise DatasetError(f"{p}: {values:,} values (list items count one each); at most {MAX_VALUES:,}")
    if suffix in PARQUET_SUFFIXES and (stored > MAX_DECODED_BYTES  # 1 KB of zstd can decode to 1 GB
                                       or _parquet_decodes_past(p, MAX_DECODED_BYTES) > MAX_DECODED_BYTES):
        raise DatasetError(f"{p}: more than {MAX_DECODED_BYTES // 2**20} MiB once decompressed")
    if rows is not None and max_rows is not None and rows > max_rows:  # 20 M rows fit in a 60 KB file
        raise DatasetError(f"{p}: {rows:,} rows; at most {max_rows:,}")
    with tempfile.TemporaryDirectory(prefix="umbra-datasets-") as cache:  # nothing left in ~/.cache
        try:
            if suffix in PARQUET_SUFFIXES:
                return datasets.Dataset.from_parquet(str(p), cache_dir=cache, keep_in_memory=True)
            return datasets.Dataset.from_json(str(p), cache_dir=cache, keep_in_memory=True)
        except Exception as exc:  # noqa: BLE001 -- datasets wraps pyarrow's errors in several types
            cause = exc.__cause__ or exc
            where = _first_bad_json_line(p) if suffix in JSON_SUFFIXES else ""
            kind = "JSON lines" if suffix in JSON_SUFFIXES else "Parquet"
            raise DatasetError(f"{p}: cannot be read as {kind}: {where or str(cause)[:300]}") from None


def load_file(path: str | Path, max_rows: int | None = None) -> LoadedFile:
    """Every problem of the file or ``save_to_disk`` folder at ``path``, and its row shape;
    ``max_rows``: refuse more rows than that before they become Python objects (uploads).

    Raises:
        DatasetError: missing or oversized, unreadable, no known row shape (naming the
        columns found and expected), or a bad row (naming its number, from 1).
    """
    p = Path(path)
    if not is_dataset_path(str(p)):
        raise DatasetError(f"no such file or folder: {p}")
    if _size(p) > MAX_FILE_BYTES:
        raise DatasetError(f"{p} is larger than {MAX_FILE_BYTES // 2**20} MiB")
    ds = _read(p, max_rows)
    if len(ds) == 0:
        raise DatasetError(f"{p}: no rows")
    if max_rows is not None and len(ds) > max_rows:
        raise DatasetError(f"{p}: {len(ds):,} rows; at most {max_rows:,}")
    try:
        rows = ds.to_list()
    except UnicodeDecodeError:  # a Parquet string column holding bytes that are not UTF-8
        raise DatasetError(f"{p}: a text column holds bytes that are not UTF-8") from None
    try:
        shape, problems = rows_to_problems(ds.column_names, rows)
    except DatasetError as exc:
        # datasets reads a file of JSON lines that are not objects as one "text" column: say which line
        where = _first_bad_json_line(p) if p.suffix.lower() in JSON_SUFFIXES else ""
        raise DatasetError(f"{p}: {where or exc}") from None
    return LoadedFile(shape, problems)
