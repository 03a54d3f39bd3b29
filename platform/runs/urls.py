from django.urls import path

from runs import launcher_views, model_export, views

urlpatterns = [
    path("", views.home, name="home"),
    path("teams/<slug:slug>/runs/new/", launcher_views.new_run, name="new-run"),
    path("teams/<slug:slug>/ab/<int:experiment_id>/", launcher_views.ab_status, name="ab-status"),
    path("teams/<slug:slug>/experiments/<int:experiment_id>/visibility/", views.experiment_visibility,
         name="experiment-visibility"),
    path("runs/<int:run_id>/", views.run_dashboard, name="run-dashboard"),
    path("runs/<int:run_id>/cancel/", views.run_cancel, name="run-cancel"),
    path("runs/<int:run_id>/resume/", views.run_resume, name="run-resume"),
    path("runs/<int:run_id>/labels/", views.run_labels, name="run-labels"),
    path("runs/<int:run_id>/model.tar", model_export.run_model, name="run-model"),
]
