"""How API requests say who they are: ``Authorization: Bearer <token>`` or the UI's session.

A request with an ``Authorization`` header is judged by it alone: anything but one well-formed,
usable bearer token (empty, another scheme, two values, 10 kB, non-ASCII, expired, revoked, a
deleted user's) is a 401 — never a 500, and never a silent fall-back to anonymous. Session
requests go through DRF's ``SessionAuthentication``, which enforces CSRF on every write.
"""

from __future__ import annotations

import re
from importlib import import_module
from typing import Any

from django.conf import settings
from django.contrib.auth import SESSION_KEY
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from accounts.models import ApiToken
from accounts.tokens import token_for_secret

# rs_ + URL-safe base64; generous bounds so a format change stays compatible.
TOKEN_SHAPE = re.compile(r"[A-Za-z0-9_\-]{16,128}")
MAX_HEADER_CHARS = 512


class BearerTokenAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[Any, ApiToken] | None:
        header = request.META.get("HTTP_AUTHORIZATION")
        if header is None:
            return None
        token = token_from_header(header)
        return token.user, token

    def authenticate_header(self, request: Request) -> str:
        return f'{self.keyword} realm="reposearch"'


def token_from_header(header: str) -> ApiToken:
    """The usable token an ``Authorization`` header names, else ``AuthenticationFailed``."""
    if len(header) > MAX_HEADER_CHARS:
        raise exceptions.AuthenticationFailed("the Authorization header is too long")
    parts = header.split()
    if len(parts) != 2 or parts[0].lower() != "bearer":
        raise exceptions.AuthenticationFailed(
            'send one API token as "Authorization: Bearer <token>"'
        )
    secret = parts[1]
    if not TOKEN_SHAPE.fullmatch(secret):
        raise exceptions.AuthenticationFailed("that is not an API token")
    token = token_for_secret(secret)
    if token is None:
        raise exceptions.AuthenticationFailed("unknown, expired or revoked API token")
    return token


class CsrfSessionAuthentication(authentication.SessionAuthentication):
    """The UI's session (CSRF enforced on writes by DRF), with the bearer challenge for 401s."""

    def authenticate_header(self, request: Request) -> str:
        return BearerTokenAuthentication().authenticate_header(request)


def holds_credentials(authorization: str | None, session_key: str | None) -> bool:
    """Whether a request with this ``Authorization`` header or session cookie is someone: a
    usable bearer token, or a session with a signed-in user. Asked before a large body is read
    (``reposearch/request_bodies.py``), so it touches the database, never the body."""
    if authorization is not None:
        try:
            token_from_header(authorization)
        except exceptions.AuthenticationFailed:
            return False
        return True
    if not session_key or len(session_key) > MAX_HEADER_CHARS:
        return False
    engine = import_module(settings.SESSION_ENGINE)
    return SESSION_KEY in engine.SessionStore(session_key).load()
