"""A process pool for reward functions with a per-call timeout (ours; the standard library's
``concurrent.futures`` cannot stop a call that hangs).

Each worker is a spawned process that loads the run's reward once and answers one call at a
time in its main thread (math-verify bounds parsing with a signal alarm, which only works
there). A call that raises, returns something other than a finite number (or a dict with
one as ``score``), or runs past ``timeout_s`` is an :class:`Outcome` with ``error`` set and
score 0; a worker that timed out or died is killed and replaced, with the processes its reward
started, also those that left its process tree (and :meth:`RewardPool.close` ends those too). Nothing here raises for a
bad reward: a reward never kills the run. What the workers print reaches the job log only up to
``umbra.rewards.output.OUTPUT_CAP_BYTES`` a run.
"""
from __future__ import annotations

import math
import multiprocessing as mp
import numbers
import os
import re
import time
import traceback
import uuid
from collections import deque
from dataclasses import dataclass, field
from multiprocessing.connection import wait

import psutil

from umbra.rewards.output import BoundedOutput

LIVENESS_S = 0.5  # how often a busy worker's exit is looked for
STARTUP_TIMEOUT_S = 120.0  # spawning and importing the reward (math-verify, sympy) on a busy machine
MAX_EXTRA_KEYS = 16
_KEY = re.compile(r"[^a-z0-9_]+")


@dataclass
class Outcome:
    """One call's result: ``score`` (0.0 on error), extra numbers of a dict result, and on
    failure ``error`` (first traceback lines) with ``error_key`` (its last line: one per distinct error)."""

    score: float = 0.0
    extras: dict[str, float] = field(default_factory=dict)
    error: str | None = None
    error_key: str | None = None


def _builtin(name: str):
    """A built-in reward in veRL's signature."""
    if name == "math":
        from umbra.rewards.math_answer import math_reward as fn
    elif name == "gsm8k-strict":
        from umbra.rewards.gsm8k_strict import gsm8k_strict_reward as fn
    else:
        from umbra.rewards.exact import exact_reward as fn
    return lambda data_source, solution_str, ground_truth, extra_info: fn(solution_str, ground_truth)


def _load(spec: str):
    from umbra.rewards.custom import BUILTIN_REWARDS, load_function
    return _builtin(spec) if spec in BUILTIN_REWARDS else load_function(spec)


def _number(value, what: str) -> float:
    if isinstance(value, numbers.Real):
        try:
            out = float(value)
        except (OverflowError, ValueError):
            raise ValueError(f"reward {what} is too large for a float") from None
        if math.isfinite(out):
            return out
        raise ValueError(f"reward {what} is {out}, not a finite number")
    raise TypeError(f"reward {what} is a {type(value).__name__} ({str(value)[:60]!r}), not a number")


def normalise_result(value) -> tuple[float, dict[str, float]]:
    """``(score, extras)`` of a reward's return value (veRL: a float, or a dict with ``score``
    and extra numbers; extras that are not finite numbers are left out). Raises on a bad score."""
    if isinstance(value, dict):
        if "score" not in value:
            raise KeyError(f"reward returned a dict without 'score' (keys: {sorted(map(str, value))[:8]})")
        extras = {}
        for k, v in value.items():
            key = _KEY.sub("_", str(k).lower()).strip("_")[:40]
            if k != "score" and key and len(extras) < MAX_EXTRA_KEYS and isinstance(v, numbers.Real):
                try:
                    number = float(v)
                except (OverflowError, ValueError):  # an int of 400 digits: left out like a NaN
                    continue
                if math.isfinite(number):
                    extras[key] = number
        return _number(value["score"], "score"), extras
    return _number(value, "result"), {}


def _error(exc: BaseException) -> tuple[str, str]:
    """``(text, key)``: the error line, then the traceback's first lines in the reward's own
    code (our frames and importlib's left out); ``key`` is the error line."""
    key = "".join(traceback.format_exception_only(type(exc), exc)).strip().splitlines()[-1]
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if not f.filename.startswith("<frozen") and "umbra/rewards/" not in f.filename.replace("\\", "/")]
    lines = "".join(traceback.format_list(frames)).rstrip().splitlines()
    return "\n".join([key, "Traceback (most recent call last):", *lines[:10]]), key


def _worker(conn, spec: str, output, mark: str) -> None:
    """A pool worker's main loop: put ``mark`` in its environment (``MARK_ENV``: what the reward
    starts inherits it), print into ``output`` (the pool's bounded pipe), load ``spec``, then
    answer ``args`` tuples until None / EOF. A copy of this process that the reward forked
    (``os.fork()`` returning in the child) ends as the call does: answering too, it would put
    a second result on the connection, which the next call would take for its own."""
    # Set here, not in the pool's process around the start: there it would mark whatever
    # another thread (or multiprocessing's resource tracker) started meanwhile.
    os.environ[MARK_ENV] = mark
    BoundedOutput.attach(output)
    me = os.getpid()
    try:
        fn, load_error = _load(spec), None
    except BaseException as exc:  # noqa: BLE001 -- sys.exit() at import too: reported with every call, score 0
        fn, load_error = None, _error(exc)
    _exit_if_forked(me)  # a file that forks as it is imported
    conn.send("ready")
    while True:
        try:
            args = conn.recv()
        except (EOFError, OSError):
            return
        if args is None:
            return
        if load_error:
            conn.send(("err", *load_error))
            continue
        try:
            value = fn(*args)
        except Exception as exc:
            _exit_if_forked(me)
            conn.send(("err", *_error(exc)))
            continue
        _exit_if_forked(me)
        try:
            conn.send(("ok", *normalise_result(value)))
        except Exception as exc:  # a bad result: its message says what came back
            conn.send(("err", f"{type(exc).__name__}: {exc}", f"{type(exc).__name__}: {exc}"))


def _exit_if_forked(worker_pid: int) -> None:
    if os.getpid() != worker_pid:
        os._exit(0)


def _children(proc) -> list[psutil.Process]:
    """The processes ``proc`` started and theirs ([] once it is gone)."""
    try:
        return psutil.Process(proc.pid).children(recursive=True)
    except psutil.Error:
        return []


def _kill(processes: list[psutil.Process]) -> None:
    for child in processes:
        try:
            child.kill()  # psutil checks that the pid is still that process
        except psutil.Error:
            pass


# Every worker puts its mark in its environment; the programs its reward starts inherit it,
# which finds them after they left the worker's tree (os.setsid, a worker gone by os._exit:
# its children then belong to init). Not found that way: a program started with an
# environment of its own (env={...}) and a forked copy that never runs another program (the
# kernel shows a process's environment as it was when it started). Reward files are the
# operator's (UMBRA_REWARD_DIRS): this catches their mistakes, not malice.
MARK_ENV = "UMBRA_REWARD_WORKER"


def _marked(prefix: str) -> list[psutil.Process]:
    """This user's processes, other than this one, whose mark starts with ``prefix``."""
    me, uid, out = os.getpid(), os.getuid(), []
    for proc in psutil.process_iter(["uids"]):
        try:
            if proc.pid != me and proc.info["uids"] and proc.info["uids"].real == uid \
                    and proc.environ().get(MARK_ENV, "").startswith(prefix):
                out.append(proc)
        except psutil.Error:  # gone, a zombie, or not ours to read
            pass
    return out


def _kill_tree(proc) -> None:
    """Kill ``proc`` and the processes it started (what a timed-out or finished reward left
    running), then reap ``proc`` by its pid: a child of the reward may hold the pipe that
    ``Process.join`` waits on, so join could wait for that child instead."""
    children = _children(proc)
    proc.kill()
    _kill(children)
    deadline = time.monotonic() + 5.0
    while proc.is_alive() and time.monotonic() < deadline:  # is_alive reaps it (waitpid)
        time.sleep(0.01)


class _Proc:
    def __init__(self, ctx, spec: str, output: BoundedOutput, mark: str):
        self.conn, child = ctx.Pipe()
        self.mark = mark  # ends with "/": no worker's mark is the start of another's
        self.proc = ctx.Process(target=_worker, args=(child, spec, output.writer, mark), daemon=True,
                                name="umbra-reward")
        self.proc.start()
        child.close()

    def ready(self, timeout: float) -> bool:
        try:
            return self.conn.poll(timeout) and self.conn.recv() == "ready"
        except (EOFError, OSError):
            return False

    def kill(self) -> None:
        _kill_tree(self.proc)
        _kill(_marked(self.mark))  # what left its tree
        self.conn.close()


class RewardPool:
    """``workers`` processes scoring with reward ``spec`` (a built-in name or ``file.py:function``)."""

    def __init__(self, spec: str, workers: int = 2, timeout_s: float = 10.0):
        self.spec, self.timeout_s = spec, timeout_s
        # Set once a replacement worker could not load the reward either (its file hangs or exits
        # at import): every later call fails at once with it, instead of waiting out each start-up.
        self.load_error: str | None = None
        self._ctx = mp.get_context("spawn")  # never fork a Ray driver
        self.output = BoundedOutput(self._ctx)  # the workers' stdout and stderr, capped
        self._mark, self._started = f"{os.getpid()}-{uuid.uuid4().hex[:12]}/", 0
        self._procs = [self._new_proc() for _ in range(max(1, workers))]
        for i, p in enumerate(self._procs):
            if self.load_error is None and not p.ready(STARTUP_TIMEOUT_S):
                self._procs[i] = self._restart(p)

    def _new_proc(self) -> _Proc:
        self._started += 1
        return _Proc(self._ctx, self.spec, self.output, f"{self._mark}{self._started}/")

    def _restart(self, p: _Proc) -> _Proc:
        p.kill()
        new = self._new_proc()
        if self.load_error is None and not new.ready(STARTUP_TIMEOUT_S):
            new.proc.join(0.5)
            self.load_error = (f"reward did not load within {STARTUP_TIMEOUT_S:g} s (does its file hang at import?)"
                               if new.proc.exitcode is None else
                               f"reward process exited while loading the reward (exit code {new.proc.exitcode})")
        return new

    def score(self, calls: list[tuple]) -> list[Outcome]:
        """One Outcome per ``(data_source, solution_str, ground_truth, extra_info)`` call, in order."""
        results: list[Outcome | None] = [None] * len(calls)
        pending = deque(enumerate(calls))
        busy: dict[int, tuple[int, float]] = {}  # proc index -> (call index, deadline)
        while pending or busy:
            while self.load_error and pending:  # no worker can load it: fail at once
                results[pending.popleft()[0]] = Outcome(error=self.load_error, error_key=self.load_error)
            for i, p in enumerate(self._procs):
                if i not in busy and pending:
                    n, args = pending.popleft()
                    try:
                        p.conn.send(args)
                        busy[i] = (n, time.monotonic() + self.timeout_s)
                    except Exception as exc:  # a dead worker (OSError) or an input that does not pickle
                        results[n] = Outcome(error=f"reward call could not be sent: {exc}",
                                             error_key=f"reward call could not be sent: {type(exc).__name__}")
                        if isinstance(exc, OSError):
                            self._procs[i] = self._restart(p)
            if not busy:  # every call just handed out failed to send
                continue
            first_deadline = min(d for _, d in busy.values())
            # woken at least every LIVENESS_S: a worker that died while a process it started holds its
            # end of the connection gives no EOF, only its exit shows
            ready = wait([self._procs[i].conn for i in busy],
                         min(LIVENESS_S, max(0.0, first_deadline - time.monotonic())))
            for i in list(busy):
                p, (n, deadline) = self._procs[i], busy[i]
                if p.conn in ready or not p.proc.is_alive():
                    del busy[i]
                    try:
                        if p.conn not in ready and not p.conn.poll(0):
                            raise EOFError  # exited without an answer
                        kind, a, b = p.conn.recv()
                        results[n] = Outcome(score=a, extras=b) if kind == "ok" else Outcome(error=a, error_key=b)
                    except (EOFError, OSError):
                        reap_by = time.monotonic() + 1.0
                        while p.proc.is_alive() and time.monotonic() < reap_by:  # reaped: its exit code is known
                            time.sleep(0.01)
                        code = p.proc.exitcode
                        results[n] = Outcome(error=f"reward process died (exit code {code})",
                                             error_key=f"reward process died (exit code {code})")
                        self._procs[i] = self._restart(p)
                elif time.monotonic() >= deadline:
                    del busy[i]
                    msg = f"reward call timed out after {self.timeout_s:g} s (the call was stopped)"
                    results[n] = Outcome(error=msg, error_key=msg)
                    self._procs[i] = self._restart(p)
        return results  # type: ignore[return-value]

    def close(self) -> None:
        """Stop the workers and whatever processes their reward left running."""
        left = [child for p in self._procs for child in _children(p.proc)]  # before their parent ends
        for p in self._procs:
            try:
                p.conn.send(None)
            except (OSError, ValueError):
                pass
        deadline = time.monotonic() + 2.0
        for p in self._procs:  # each ends on the None; by its pid (Process.join could wait on a reward's child)
            while p.proc.is_alive() and time.monotonic() < deadline:
                time.sleep(0.01)
        for p in self._procs:
            p.kill()
        _kill(left)
        _kill(_marked(self._mark))  # any worker's, also of workers replaced earlier
        self.output.close()
