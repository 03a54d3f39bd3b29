from django.urls import path

from whatif import views

urlpatterns = [
    path("whatif/", views.home, name="whatif-home"),
    path("teams/<slug:slug>/whatif/", views.team_simulations, name="team-simulations"),
    path("whatif/<int:pk>/", views.simulation, name="simulation"),
    path("whatif/<int:pk>.json", views.simulation_json, name="simulation-json"),
]
