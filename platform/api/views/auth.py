"""``POST /api/auth/token/``: trade a username and password for an API token;
``DELETE`` revokes the token the request signs in with (``umbra logout``)."""
from __future__ import annotations

from django.core.cache import caches
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.authentication import TokenAuthentication
from rest_framework.authtoken.models import Token
from rest_framework.authtoken.serializers import AuthTokenSerializer
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.permissions import IsAuthenticated
from rest_framework.throttling import AnonRateThrottle

from api.errors import error
from api.parsers import BoundedJSONParser


class LoginThrottle(AnonRateThrottle):
    """Slows password guessing: a few attempts per minute per address."""

    rate = "20/min"
    cache = caches["throttle"]


class TokenView(ObtainAuthToken):
    throttle_classes = [LoginThrottle]
    # DRF's (a login form posts form fields), with the API's JSON parser that bounds nesting.
    parser_classes = [BoundedJSONParser, FormParser, MultiPartParser]

    @extend_schema(request=AuthTokenSerializer, responses={
        200: inline_serializer("Token", {"token": serializers.CharField()}),
        400: error(400, "a field missing, or an unknown username or wrong password (`non_field_errors`)")})
    def post(self, request, *args, **kwargs):
        """The user's API token (created on first login); 400 on bad credentials."""
        return super().post(request, *args, **kwargs)

    def get_authenticators(self):
        # POST takes a password (no sign-in); DELETE only the token it revokes (no session:
        # a cross-site form must not be able to log anybody out).
        if getattr(self.request, "method", None) == "DELETE":  # (None: the schema generator)
            return [TokenAuthentication()]
        return super().get_authenticators()

    def get_permissions(self):
        if getattr(self.request, "method", None) == "DELETE":
            return [IsAuthenticated()]
        return super().get_permissions()

    @extend_schema(request=None, auth=[{"tokenAuth": []}], responses={
        204: None, 401: error(401, "no token, or one already revoked: send `Authorization: Token <token>`")})
    def delete(self, request, *args, **kwargs):
        """Revoke the token this request signs in with; the next login issues a new one."""
        Token.objects.filter(key=request.auth.key).delete()
        return Response(status=204)
