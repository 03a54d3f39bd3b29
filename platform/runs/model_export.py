"""A run's trained model as a download (ours): the Hugging Face folder (``hf``) of its latest
checkpoint (``umbra.job.checkpoint`` layout, written by the trainer), streamed as a tar
archive file by file — never built in memory — for the run page and ``umbra export``.

Only members of the run's team download it, even when the run is visible organization-wide.
"""
from __future__ import annotations

import tarfile
from collections.abc import Iterator
from pathlib import Path

from django.http import Http404, HttpResponse, StreamingHttpResponse

from runs.ray_jobs import checkpoint_dir

HF_FOLDER = "hf"  # as umbra.training.hf_folder.HF_FOLDER (the platform imports no job code)
CHUNK = 1 << 20


def may_download(user, run) -> bool:
    """Members of the run's team (any role)."""
    from teams.selectors import membership

    return membership(user, run.experiment.team) is not None


def latest_model_folder(run) -> Path | None:
    """The ``hf`` folder of the run's latest complete checkpoint, or None."""
    root = Path(checkpoint_dir(run.pk))
    try:
        name = (root / "latest").read_text().strip()
    except OSError:
        return None
    folder = root / name / HF_FOLDER
    if not name or "/" in name or name in (".", "..") or not folder.resolve().is_relative_to(root.resolve()) \
            or not (folder / "config.json").is_file():
        return None
    return folder


def _regular_files(folder: Path) -> list[Path]:
    """``folder``'s plain files, sorted, none reached through a symlink: the job runs
    members' reward code, and a link could point at any file the server can read."""
    real = folder.resolve()
    return sorted(p for p in folder.rglob("*")
                  if p.is_file() and not p.is_symlink() and p.resolve().is_relative_to(real))


def tar_stream(folder: Path, prefix: str) -> Iterator[bytes]:
    """An uncompressed POSIX tar of ``folder``'s files under ``prefix/``, chunk by chunk."""
    for path in _regular_files(folder):
        with path.open("rb") as f:  # open first: a checkpoint replaced meanwhile keeps its data
            info = tarfile.TarInfo(f"{prefix}/{path.relative_to(folder).as_posix()}")
            st = path.stat()
            info.size, info.mtime, info.mode = st.st_size, int(st.st_mtime), 0o644
            yield info.tobuf(tarfile.PAX_FORMAT)
            left = info.size
            while left > 0 and (data := f.read(min(CHUNK, left))):
                left -= len(data)
                yield data
            if left:  # the file shrank: pad so the archive stays well-formed
                yield b"\0" * left
        if info.size % tarfile.BLOCKSIZE:
            yield b"\0" * (tarfile.BLOCKSIZE - info.size % tarfile.BLOCKSIZE)
    yield b"\0" * (2 * tarfile.BLOCKSIZE)


def model_response(user, run, head: bool = False) -> StreamingHttpResponse | HttpResponse:
    """The streamed download; Http404 when ``user`` is not of the run's team or the run has
    no checkpoint with a model folder yet. ``head``: the same answer without the body (the
    run page asks whether there is a model yet)."""
    if not may_download(user, run):
        raise Http404("no such run")
    folder = latest_model_folder(run)
    if folder is None:
        raise Http404(f"run {run.pk} has no checkpoint with a model yet (checkpoint_every saves one)")
    name = f"umbra-run-{run.pk}-{folder.parent.name}"
    resp = (HttpResponse(content_type="application/x-tar") if head
            else StreamingHttpResponse(tar_stream(folder, name), content_type="application/x-tar"))
    resp["Content-Disposition"] = f'attachment; filename="{name}.tar"'
    return resp


def run_model(request, run_id: int):
    """The run page's "Download model" link (login required; 404 for other teams)."""
    from runs.selectors import run_for

    if not request.user.is_authenticated:
        from django.contrib.auth.views import redirect_to_login

        return redirect_to_login(request.get_full_path())
    return model_response(request.user, run_for(request.user, run_id), head=request.method == "HEAD")


def model_checkpoint(user, run) -> str | None:
    """The name of the checkpoint the run page offers for download (``it-000009``), or None."""
    if not may_download(user, run):
        return None
    folder = latest_model_folder(run)
    return folder.parent.name if folder else None
