from django.urls import path

from telemetry import dashboard_views, run_table_views

urlpatterns = [
    path("teams/<slug:slug>/runs/", run_table_views.team_runs, name="team-runs"),
    path("runs/<int:run_id>/series.json", dashboard_views.run_series, name="run-series"),
    path("runs/<int:run_id>/headline.json", dashboard_views.run_headline, name="run-headline"),
]
