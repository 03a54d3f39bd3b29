"""WebSocket consumer: a dashboard subscribes to one run's live messages."""
from __future__ import annotations

import time

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from runs.selectors import visible_runs
from teams.models import Membership
from telemetry.access_checks import RECHECK_S, Access, still_allowed
from telemetry.broadcast import group_name, team_group_name

GONE = 4404  # close code: the run does not exist for this user (any more)


class RunConsumer(AsyncJsonWebsocketConsumer):
    """``/ws/runs/<id>/``: joins group ``run-<id>`` if the user may see the run;
    otherwise refuses the handshake (close code 4404: the run does not exist for them).

    Access is checked again before forwarding a message when the last check is
    ``RECHECK_S`` old, against the session as stored now (``telemetry.access_checks``):
    a user who logged out, left the team, or whose run became team-only is disconnected
    within ``RECHECK_S`` (plus the check's own time) instead of receiving the run's data.
    """

    async def connect(self):
        self.run_id = int(self.scope["url_route"]["kwargs"]["run_id"])
        if not await self._allowed(self.scope.get("user")):
            await self.close(code=GONE)
            return
        self.checked_at = time.monotonic()
        await self.channel_layer.group_add(group_name(self.run_id), self.channel_name)
        await self.accept()

    async def _allowed(self, user) -> bool:
        return user is not None and await database_sync_to_async(
            lambda: visible_runs(user).filter(pk=self.run_id).exists())()

    async def _still_allowed(self) -> bool:
        if "session" in self.scope:  # a browser connection: who the stored session belongs to now
            key = self.scope["session"].session_key
            access = Access(self.run_id, session_key=key) if key else Access(self.run_id)
        else:
            access = Access(self.run_id, user=self.scope.get("user"))
        return await still_allowed(access)

    async def disconnect(self, code):
        if hasattr(self, "run_id"):
            await self.channel_layer.group_discard(group_name(self.run_id), self.channel_name)

    async def receive(self, text_data=None, bytes_data=None, **kwargs):
        """Dashboards only listen; anything they send (JSON or not) is ignored."""

    async def run_message(self, event):
        if time.monotonic() - self.checked_at >= RECHECK_S:
            if not await self._still_allowed():
                await self.channel_layer.group_discard(group_name(self.run_id), self.channel_name)
                await self.close(code=GONE)
                return
            # Stamped when the check ends, not starts: a check slower than RECHECK_S (a loaded
            # database) must not make every message wait for a check of its own.
            self.checked_at = time.monotonic()
        await self.send(text_data=event["text"])  # JSON, encoded once by telemetry.broadcast


class RejectConsumer(AsyncJsonWebsocketConsumer):
    """Any other WebSocket path: refuse the handshake instead of erroring."""

    async def connect(self):
        await self.close()


class TeamRunsConsumer(AsyncJsonWebsocketConsumer):
    """``/ws/teams/<slug>/runs/``: a team's runs table follows its runs' states and latest
    numbers (group ``team-runs-<id>``); members only (others are refused with 4404). The
    membership is checked again every ``RECHECK_S`` before a message is forwarded."""

    async def connect(self):
        self.team_id = await self._team_id(self.scope["url_route"]["kwargs"]["slug"])
        if self.team_id is None:
            await self.close(code=GONE)
            return
        self.checked_at = time.monotonic()
        await self.channel_layer.group_add(team_group_name(self.team_id), self.channel_name)
        await self.accept()

    async def _team_id(self, slug: str) -> int | None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            return None
        return await database_sync_to_async(lambda: Membership.objects.filter(
            user=user, team__slug=slug).values_list("team_id", flat=True).first())()

    async def disconnect(self, code):
        if getattr(self, "team_id", None) is not None:
            await self.channel_layer.group_discard(team_group_name(self.team_id), self.channel_name)

    async def receive(self, text_data=None, bytes_data=None, **kwargs):
        """The table only listens."""

    async def run_message(self, event):
        if time.monotonic() - self.checked_at >= RECHECK_S:
            if await self._team_id(self.scope["url_route"]["kwargs"]["slug"]) != self.team_id:
                await self.channel_layer.group_discard(team_group_name(self.team_id), self.channel_name)
                await self.close(code=GONE)
                return
            self.checked_at = time.monotonic()
        await self.send(text_data=event["text"])
