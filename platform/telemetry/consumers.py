"""WebSocket consumer: a dashboard subscribes to one run's live messages."""
from __future__ import annotations

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from runs.selectors import visible_runs
from telemetry.broadcast import group_name


class RunConsumer(AsyncJsonWebsocketConsumer):
    """``/ws/runs/<id>/``: joins group ``run-<id>`` if the user may see the run;
    otherwise refuses the handshake (HTTP 403; the run does not exist for them)."""

    async def connect(self):
        self.run_id = int(self.scope["url_route"]["kwargs"]["run_id"])
        user = self.scope.get("user")
        allowed = user is not None and await database_sync_to_async(
            lambda: visible_runs(user).filter(pk=self.run_id).exists())()
        if not allowed:
            await self.close(code=4404)
            return
        await self.channel_layer.group_add(group_name(self.run_id), self.channel_name)
        await self.accept()

    async def disconnect(self, code):
        if hasattr(self, "run_id"):
            await self.channel_layer.group_discard(group_name(self.run_id), self.channel_name)

    async def receive(self, text_data=None, bytes_data=None, **kwargs):
        """Dashboards only listen; anything they send (JSON or not) is ignored."""

    async def run_message(self, event):
        await self.send_json(event["message"])


class RejectConsumer(AsyncJsonWebsocketConsumer):
    """Any other WebSocket path: refuse the handshake instead of erroring."""

    async def connect(self):
        await self.close()
