"""Sign-in by a trusted reverse proxy's header (``REPO_SEARCH_REMOTE_USER_HEADER``).

A proxy that has already authenticated the user (oauth2-proxy, Authelia, Authentik's outpost,
an nginx ``auth_request``) names them in a header, e.g. ``X-Forwarded-User``, and optionally
their groups in ``REPO_SEARCH_REMOTE_GROUPS_HEADER`` (comma-separated). Built on Django's
``RemoteUserMiddleware`` / ``RemoteUserBackend``: the user is created on first sight and logged
in to a session, so the UI and the API (DRF's session authentication reads the same
``request.user``) both see them. Groups are synced when the header's value changes.

The headers count only from ``REPO_SEARCH_TRUSTED_PROXIES`` (``proxies``); from anyone else they
are removed from the request before anything reads them, and a session the header had started
is signed out, as Django's middleware does when the header is missing. A trusted proxy that
sends an unusable value (too long, not UTF-8, control characters) gets 400 naming the header.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, cast

from django.conf import settings
from django.contrib import auth
from django.contrib.auth.backends import RemoteUserBackend
from django.contrib.auth.middleware import RemoteUserMiddleware
from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase

from accounts.identity.groups import (
    IdentityRefused,
    clean_group_names,
    clean_username,
    record_account_created,
    sync_groups,
)
from accounts.identity.proxies import came_through_trusted_proxy

logger = logging.getLogger(__name__)

SESSION_GROUPS_KEY = "reposearch_remote_groups"
MAX_HEADER_CHARS = 8192


def meta_key(header: str) -> str:
    """The ``request.META`` key of an HTTP header name (``X-Forwarded-User`` -> ``HTTP_X_...``)."""
    return "HTTP_" + header.strip().upper().replace("-", "_")


def header_text(raw: str, header: str) -> str:
    """A header's value as the proxy meant it: servers decode headers as Latin-1, proxies send UTF-8."""
    if len(raw) > MAX_HEADER_CHARS:
        raise IdentityRefused(f"the {header} header is longer than {MAX_HEADER_CHARS} characters")
    try:
        return raw.encode("latin-1").decode("utf-8")
    except UnicodeError:
        raise IdentityRefused(f"the {header} header is not valid UTF-8") from None


class TrustedHeaderBackend(RemoteUserBackend):
    """Django's remote-user backend; the middleware has already checked the name."""

    create_unknown_user = True

    def configure_user(self, request: Any, user: Any, created: bool = True) -> Any:
        if created:
            user.set_unusable_password()  # signs in through the proxy only
            user.save(update_fields=["password"])
            address = request.META.get("REMOTE_ADDR") if request is not None else None
            record_account_created(user, "proxy", address)
        return user


class TrustedHeaderMiddleware(RemoteUserMiddleware):
    """``RemoteUserMiddleware`` for the configured header, honoured only from trusted proxies.

    Placed after ``AuthenticationMiddleware``. Synchronous only: Django adapts it under ASGI,
    and one code path is the one that is tested.
    """

    async_capable = False  # type: ignore[assignment]

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        super().__init__(get_response)

    @property
    def header(self) -> str:  # type: ignore[override]
        return meta_key(settings.REPO_SEARCH_REMOTE_USER_HEADER)

    def __call__(self, request: HttpRequest) -> HttpResponseBase:  # type: ignore[override]
        user_header: str = settings.REPO_SEARCH_REMOTE_USER_HEADER
        if not user_header:
            return cast(HttpResponseBase, self.get_response(request))
        groups_header: str = settings.REPO_SEARCH_REMOTE_GROUPS_HEADER
        keys = [meta_key(user_header)] + ([meta_key(groups_header)] if groups_header else [])
        if not came_through_trusted_proxy(request):
            for key in keys:
                if key in request.META:
                    logger.warning(
                        "ignored %s from untrusted address %s",
                        key,
                        request.META.get("REMOTE_ADDR"),
                    )
                    del request.META[key]
        try:
            self._clean_headers(request, user_header, groups_header)
        except IdentityRefused as refusal:
            return _refusal(request, str(refusal))
        self.process_request(request)
        if groups_header:
            try:
                self._sync_groups(request, groups_header)
            except IdentityRefused as refusal:
                return _refusal(request, str(refusal))
        return cast(HttpResponseBase, self.get_response(request))

    def _clean_headers(self, request: HttpRequest, user_header: str, groups_header: str) -> None:
        key = meta_key(user_header)
        raw = request.META.get(key)
        if raw is None:
            return
        text = header_text(raw, user_header)
        if not text.strip():
            del request.META[key]  # an empty header names nobody: the request is anonymous
            return
        request.META[key] = clean_username(text, f"the {user_header} header")
        if groups_header and meta_key(groups_header) in request.META:
            group_key = meta_key(groups_header)
            request.META[group_key] = header_text(request.META[group_key], groups_header)

    def _sync_groups(self, request: HttpRequest, groups_header: str) -> None:
        user = request.user
        if not user.is_authenticated:
            return
        if request.session.get(auth.BACKEND_SESSION_KEY) != _BACKEND_PATH:
            return  # signed in some other way: the proxy's groups do not apply
        raw = request.META.get(meta_key(groups_header), "")
        if request.session.get(SESSION_GROUPS_KEY) == raw:
            return
        names = clean_group_names(raw.split(","), f"the {groups_header} header")
        sync_groups(user, names, source="proxy", address=request.META.get("REMOTE_ADDR"))
        request.session[SESSION_GROUPS_KEY] = raw


_BACKEND_PATH = f"{TrustedHeaderBackend.__module__}.{TrustedHeaderBackend.__qualname__}"


def _refusal(request: HttpRequest, message: str) -> HttpResponse:
    from reposearch.views import error_response

    logger.warning("refused a reverse-proxy identity: %s", message)
    return error_response(request, 400, "bad_identity_header", f"Sign-in refused: {message}.")
