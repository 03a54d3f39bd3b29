"""``/api/`` routes (docs/api.md)."""
from django.urls import path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from api.views import auth, compare, errors, experiments, metrics, model_export, runs, teams, traces

urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("auth/token/", auth.TokenView.as_view(), name="api-token"),
    path("me/", teams.MeView.as_view(), name="api-me"),
    path("teams/", teams.TeamListView.as_view(), name="api-teams"),
    path("teams/<slug:slug>/members/", teams.MemberListView.as_view(), name="api-members"),
    path("teams/<slug:slug>/members/<str:username>/", teams.MemberDetailView.as_view(), name="api-member"),
    path("experiments/", experiments.ExperimentListView.as_view(), name="api-experiments"),
    path("experiments/<int:pk>/", experiments.ExperimentDetailView.as_view(), name="api-experiment"),
    path("runs/", runs.RunListView.as_view(), name="api-runs"),
    path("runs/<int:pk>/", runs.RunDetailView.as_view(), name="api-run"),
    path("runs/<int:pk>/cancel/", runs.RunCancelView.as_view(), name="api-run-cancel"),
    path("runs/<int:pk>/resume/", runs.RunResumeView.as_view(), name="api-run-resume"),
    path("runs/<int:pk>/events/", runs.RunEventsView.as_view(), name="api-run-events"),
    path("runs/<int:pk>/logs/", runs.RunLogsView.as_view(), name="api-run-logs"),
    path("runs/<int:pk>/metrics/", metrics.RunMetricsView.as_view(), name="api-run-metrics"),
    path("runs/<int:pk>/trace.jsonl", traces.RunTraceView.as_view(), name="api-run-trace"),
    path("runs/<int:pk>/model.tar", model_export.RunModelView.as_view(), name="api-run-model"),
    path("compare/", compare.CompareView.as_view(), name="api-compare"),
    path("compare/summary.csv", compare.CompareSummaryCsvView.as_view(), name="api-compare-summary-csv"),
    path("compare/series.csv", compare.CompareSeriesCsvView.as_view(), name="api-compare-series-csv"),
    re_path(r"^[\s\S]*$", errors.NotFoundView.as_view()),  # last: any other /api/ path (newlines too): JSON 404
]
