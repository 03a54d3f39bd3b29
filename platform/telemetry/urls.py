from django.urls import path

from telemetry import views

urlpatterns = [path("api/runs/<int:run_id>/metrics/", views.ingest_metrics, name="ingest-metrics")]
