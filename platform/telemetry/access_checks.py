"""Re-checking, for open dashboard sockets, that their user may still see their run.

Checking before every pushed message cost a database connection and three queries per
message per socket (10,000 points/s to 100 dashboards was ~1,000 checks/s, far more than
one process can do). Instead a socket re-checks at most every ``RECHECK_S`` seconds, and
the checks that come due together (one group message reaches many sockets at once) run
in one database call: revocation (logout, leaving the team, an experiment made
team-only) takes effect within ``RECHECK_S`` plus the time a check takes.
"""
from __future__ import annotations

import asyncio
import weakref
from dataclasses import dataclass
from importlib import import_module
from types import SimpleNamespace

from channels.db import database_sync_to_async
from django.conf import settings
from django.contrib import auth

from runs.selectors import visible_runs

RECHECK_S = 1.0


@dataclass(frozen=True)
class Access:
    """Who a socket acts for: its stored session (browser sockets) or else its scope's user."""

    run_id: int
    session_key: str | None = None
    user: object = None


def check_many(items: list[Access]) -> list[bool]:
    """Whether each item's user may see its run now (sessions read as stored now).

    Synchronous (database); one call answers a whole batch, each session and each
    (user, runs) pair queried once.
    """
    store = import_module(settings.SESSION_ENGINE).SessionStore
    users = {}
    for key in {a.session_key for a in items if a.session_key is not None}:
        users[key] = auth.get_user(SimpleNamespace(session=store(session_key=key)))
    runs = {a.run_id for a in items}
    visible: dict[int, set[int]] = {}  # user id -> the batch's runs the user may see
    answers = []
    for a in items:
        user = users[a.session_key] if a.session_key is not None else a.user
        if user is None or not user.is_authenticated:
            answers.append(False)
            continue
        if user.pk not in visible:
            visible[user.pk] = set(visible_runs(user).filter(pk__in=runs).values_list("pk", flat=True))
        answers.append(a.run_id in visible[user.pk])
    return answers


class _Batcher:
    """Collects the checks requested in one event-loop turn and answers them with one call."""

    def __init__(self):
        self.pending: list[tuple[Access, asyncio.Future]] = []
        self.task: asyncio.Task | None = None

    async def check(self, access: Access) -> bool:
        fut = asyncio.get_running_loop().create_future()
        self.pending.append((access, fut))
        if self.task is None or self.task.done():
            self.task = asyncio.create_task(self._run())
        return await fut

    async def _run(self) -> None:
        await asyncio.sleep(0)  # let the other sockets of the same group message ask too
        while self.pending:
            batch, self.pending = self.pending, []
            try:
                answers = await database_sync_to_async(check_many)([a for a, _ in batch])
            except Exception as exc:  # every waiting socket sees the failure
                for _, fut in batch:
                    if not fut.done():
                        fut.set_exception(exc)
                continue
            for (_, fut), ok in zip(batch, answers):
                if not fut.done():
                    fut.set_result(ok)


_batchers: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


async def still_allowed(access: Access) -> bool:
    """Whether ``access``'s user may still see the run (batched with concurrent checks
    of the same event loop). Raises what the database raises."""
    loop = asyncio.get_running_loop()
    if loop not in _batchers:
        _batchers[loop] = _Batcher()
    return await _batchers[loop].check(access)
