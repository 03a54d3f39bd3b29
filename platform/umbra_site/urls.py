"""URL map: pages, the REST API (with ingestion), login."""
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from umbra_site.login import ThrottledLoginView

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/login/", ThrottledLoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("api/", include("api.urls")),
    path("", include("runs.urls")),
    path("", include("telemetry.urls")),
    path("", include("compare.urls")),
    path("", include("teams.urls")),
    path("", include("whatif.urls")),
]
# Under /api/, errors are JSON (api/urls.py ends with a JSON 404 for unmatched paths).
handler500 = "api.views.errors.server_error"
