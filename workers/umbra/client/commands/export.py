"""``umbra export RUN DIR``: the run's trained model (its latest checkpoint's Hugging Face
folder) written into DIR, ready for ``transformers`` or ``vllm serve DIR``."""
from __future__ import annotations

import argparse
import sys
import tarfile
from pathlib import Path

import requests

from umbra.client.api import ApiError, error_from_response
from umbra.client.commands.args import run_id
from umbra.client.errors import EXIT_USAGE, CliError
from umbra.client.session import connect


def add_parser(sub) -> None:
    """Add ``export RUN DIR``."""
    p = sub.add_parser("export", help="write a run's trained model into a folder",
                       description="Downloads the Hugging Face model folder (config, tokenizer, safetensors) of "
                                   "the run's latest checkpoint (GET /api/runs/ID/model.tar, members of the run's "
                                   "team only) and writes its files into DIR (created; must be empty).")
    p.add_argument("run", type=run_id, help="run id")
    p.add_argument("dir", help="the folder to write (created if missing; must be empty)")


def run(args: argparse.Namespace) -> int:
    """Write the model files into ``args.dir``; prints the folder; returns 0.
    Raises CliError for a non-empty DIR, ApiError for a refused or failed download."""
    out = Path(args.dir)
    try:
        if out.exists() and (not out.is_dir() or any(out.iterdir())):
            raise CliError(f"{out} exists and is not an empty folder", EXIT_USAGE)
    except OSError as exc:  # a folder we may not list
        raise CliError(f"cannot use {out}: {exc.strerror or exc}", EXIT_USAGE) from None
    client = connect()
    url = client.absolute(f"/api/runs/{args.run}/model.tar")
    try:
        with client.session.get(url, stream=True, timeout=client.timeout,
                                headers={"Accept": "application/x-tar, application/json"}) as resp:
            if resp.status_code >= 400:
                err = error_from_response(resp)
                raise err.with_prefix(f"run {args.run}")
            try:
                out.mkdir(parents=True, exist_ok=True)
                resp.raw.decode_content = True
                count = _extract(resp.raw, out)
            except OSError as exc:  # not writable, a file in the way, the disk full
                raise CliError(f"cannot write the model into {out}: {exc.strerror or exc}"
                               f"{f' ({exc.filename})' if exc.filename else ''}", EXIT_USAGE) from None
            except tarfile.TarError as exc:  # the server stopped mid-stream
                raise ApiError(f"download of run {args.run}'s model was cut short ({exc}); "
                               f"remove {out} and try again") from None
    except requests.exceptions.RequestException as exc:
        raise ApiError(f"download of run {args.run}'s model failed: {exc}") from None
    print(f"run {args.run}: {count} files written to {out}")
    sys.stdout.flush()
    return 0


def _extract(stream, out: Path) -> int:
    """Unpack the tar ``stream`` (one top folder) into ``out`` without that folder; only
    plain files, never outside ``out``. Returns the number of files written."""
    count = 0
    with tarfile.open(fileobj=stream, mode="r|") as tar:
        for member in tar:
            parts = Path(member.name).parts[1:]
            if not member.isfile() or not parts or ".." in parts or Path(member.name).is_absolute():
                raise ApiError(f"unexpected entry {member.name!r} in the model archive")
            target = out.joinpath(*parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            src = tar.extractfile(member)
            with target.open("wb") as f:
                while chunk := src.read(1 << 20):
                    f.write(chunk)
            count += 1
    if not count:
        raise ApiError("the model archive was empty")
    return count
