from django.urls import path

from telemetry.consumers import RunConsumer

websocket_urlpatterns = [path("ws/runs/<int:run_id>/", RunConsumer.as_asgi())]
