from django.urls import path

from runs import views

urlpatterns = [
    path("", views.home, name="home"),
    path("teams/<slug:slug>/runs/", views.team_runs, name="team-runs"),
    path("teams/<slug:slug>/runs/new/", views.new_run, name="new-run"),
    path("teams/<slug:slug>/experiments/<int:experiment_id>/visibility/", views.experiment_visibility,
         name="experiment-visibility"),
    path("runs/<int:run_id>/", views.run_dashboard, name="run-dashboard"),
    path("runs/<int:run_id>/cancel/", views.run_cancel, name="run-cancel"),
    path("runs/<int:run_id>/resume/", views.run_resume, name="run-resume"),
]
