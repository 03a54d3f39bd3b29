from django.urls import path

from telemetry import dashboard_views

urlpatterns = [
    path("runs/<int:run_id>/series.json", dashboard_views.run_series, name="run-series"),
]
