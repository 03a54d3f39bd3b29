from django.urls import path

from teams import views

urlpatterns = [path("teams/<slug:slug>/members/", views.members, name="team-members")]
