"""What the reward pool's workers print, bounded (ours): their stdout and stderr (file
descriptors 1 and 2, so C extensions and child processes too) go into one pipe that a thread of
the pool's process drains; the first ``cap`` bytes go on to the job log (this process's stderr),
the rest are counted and dropped. A reward that prints a million lines neither floods the job
log nor fills memory, and never blocks on a full pipe."""
from __future__ import annotations

import codecs
import os
import sys
import threading

OUTPUT_CAP_BYTES = 64 * 1024  # of the reward's output shown in the job log, per run (all workers together)
_CHUNK = 64 * 1024


class BoundedOutput:
    """The pipe the pool's workers write to (:meth:`attach` in each worker) and its reader."""

    def __init__(self, ctx, cap: int = OUTPUT_CAP_BYTES):
        self.cap = cap
        self.shown = 0
        self.dropped = 0  # bytes past the cap
        self._reader, self.writer = ctx.Pipe(duplex=False)  # passed to each worker (spawn duplicates it)
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._thread = threading.Thread(target=self._drain, name="umbra-reward-output", daemon=True)
        self._thread.start()

    @staticmethod
    def attach(writer) -> None:
        """In a worker: send file descriptors 1 and 2 (and ``sys.stdout``/``sys.stderr``) into
        ``writer``, line-buffered: a ``print`` is one write, so the lines of workers printing at
        once do not mix mid-line (unbuffered, as under PYTHONUNBUFFERED, each of its pieces is a write)."""
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (AttributeError, OSError, ValueError):
                pass
        os.dup2(writer.fileno(), 1)
        os.dup2(writer.fileno(), 2)
        writer.close()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.reconfigure(line_buffering=True, write_through=False)
            except (AttributeError, OSError, ValueError):  # replaced by something that is no TextIOWrapper
                pass

    def _drain(self) -> None:
        """The reader thread: forwards, counts and drops until every write end is closed; it
        then closes the read end itself (closed under it, its descriptor could be reused)."""
        try:
            self._forward()
        finally:
            self._reader.close()

    def _forward(self) -> None:
        fd = self._reader.fileno()
        while True:
            try:
                chunk = os.read(fd, _CHUNK)
            except OSError:
                return
            if not chunk:  # every write end closed
                return
            keep = chunk[:max(0, self.cap - self.shown)]
            self.shown += len(keep)
            self.dropped += len(chunk) - len(keep)
            text = self._decoder.decode(keep)
            if len(keep) < len(chunk) and self.dropped == len(chunk) - len(keep):  # the cap was just reached
                text += (f"\n[umbra] the reward printed more than {self.cap // 1024} KiB: "
                         "the rest of its output is not shown\n")
            if text:
                try:
                    sys.stderr.write(text)
                    sys.stderr.flush()
                except (OSError, ValueError):
                    pass

    def close(self) -> None:
        """After the workers ended: close our write end and wait a little for the reader to
        forward what is left (a process the reward started may still hold a write end: the
        daemon thread then drains it until it ends)."""
        self.writer.close()
        self._thread.join(2)
