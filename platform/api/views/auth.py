"""``POST /api/auth/token/``: trade a username and password for an API token."""
from __future__ import annotations

from django.core.cache import caches
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.authtoken.serializers import AuthTokenSerializer
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.throttling import AnonRateThrottle


class LoginThrottle(AnonRateThrottle):
    """Slows password guessing: a few attempts per minute per address."""

    rate = "20/min"
    cache = caches["throttle"]


class TokenView(ObtainAuthToken):
    throttle_classes = [LoginThrottle]

    @extend_schema(request=AuthTokenSerializer,
                   responses=inline_serializer("Token", {"token": serializers.CharField()}))
    def post(self, request, *args, **kwargs):
        """The user's API token (created on first login); 400 on bad credentials."""
        return super().post(request, *args, **kwargs)
