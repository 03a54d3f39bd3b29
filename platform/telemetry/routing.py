from django.urls import path, re_path

from telemetry.consumers import RejectConsumer, RunConsumer, TeamRunsConsumer

websocket_urlpatterns = [
    path("ws/runs/<int:run_id>/", RunConsumer.as_asgi()),
    path("ws/teams/<slug:slug>/runs/", TeamRunsConsumer.as_asgi()),
    re_path(r"", RejectConsumer.as_asgi()),
]
