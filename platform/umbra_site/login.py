"""The login page, with failed attempts throttled per client address."""
from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.core.cache import caches
from django.http import HttpResponse

MAX_FAILURES = 20     # per address and window
WINDOW_S = 60


class ThrottledLoginView(auth_views.LoginView):
    """Django's LoginView; after ``MAX_FAILURES`` failed attempts from one address in
    ``WINDOW_S`` seconds it answers 429 until the window ends (slows password guessing)."""

    def _key(self) -> str:
        return f"login-failures:{self.request.META.get('REMOTE_ADDR', '')}"

    def post(self, request, *args, **kwargs):
        if caches["throttle"].get(self._key(), 0) >= MAX_FAILURES:
            return HttpResponse("Too many failed logins; try again in a minute.", status=429,
                                content_type="text/plain")
        return super().post(request, *args, **kwargs)

    def form_invalid(self, form):
        cache = caches["throttle"]
        if not cache.add(self._key(), 1, WINDOW_S):
            cache.incr(self._key())
        return super().form_invalid(form)
