from django.urls import path

from compare import views

urlpatterns = [path("compare/", views.compare_page, name="compare")]
