"""The OpenID Connect sign-in pages: ``/oidc/authenticate/`` and ``/oidc/callback/``.

mozilla-django-oidc's views, made to answer a page a person can act on instead of a 500 or a
silent redirect: the provider down (502), a stale or forged ``state`` and an ID token that does
not verify (400), an identity the provider gave that cannot be used here (403). Both answer 404
while OpenID Connect is not configured.
"""

from __future__ import annotations

import logging
from typing import Any

import requests
from django.conf import settings
from django.core.exceptions import SuspiciousOperation
from django.http import HttpRequest, HttpResponse
from django.views import View
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from accounts.identity.groups import IdentityRefused
from accounts.identity.oidc import oidc_enabled
from accounts.identity.oidc_provider import ProviderUnavailable, provider_endpoints

logger = logging.getLogger(__name__)

START_AGAIN = "Start again from the sign-in page."


def _page(request: HttpRequest, status: int, code: str, message: str) -> HttpResponse:
    from reposearch.views import error_response

    return error_response(request, status, code, message)


def _not_configured(request: HttpRequest) -> HttpResponse:
    return _page(request, 404, "not_found", "Single sign-on is not configured on this server.")


def _provider_down(request: HttpRequest, error: Exception) -> HttpResponse:
    logger.warning("OpenID Connect provider unavailable: %s", error)
    return _page(
        request,
        502,
        "identity_provider_unavailable",
        f"The identity provider could not be reached, so you cannot sign in with it right now"
        f" ({error}). Try again later, or sign in with a password.",
    )


class SignInView(OIDCAuthenticationRequestView):  # type: ignore[misc]
    """Sends the browser to the provider's authorization endpoint (state, nonce and PKCE)."""

    def __init__(self, **kwargs: Any) -> None:
        View.__init__(self, **kwargs)  # the endpoints are resolved per request, not here

    def get(self, request: HttpRequest) -> HttpResponse:
        if not oidc_enabled():
            return _not_configured(request)
        try:
            endpoints = provider_endpoints()
        except ProviderUnavailable as error:
            return _provider_down(request, error)
        self.OIDC_OP_AUTH_ENDPOINT = endpoints.authorization_endpoint
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID
        response: HttpResponse = super().get(request)
        return response


class CallbackView(OIDCAuthenticationCallbackView):  # type: ignore[misc]
    """Where the provider sends the browser back with a code (or an error)."""

    def get(self, request: HttpRequest) -> HttpResponse:
        if not oidc_enabled():
            return _not_configured(request)
        try:
            response: HttpResponse = super().get(request)
        except ProviderUnavailable as error:
            return _provider_down(request, error)
        except requests.HTTPError as error:
            status = error.response.status_code if error.response is not None else 0
            if status not in (400, 401):  # not a refused code: the provider is in trouble
                return _provider_down(request, ProviderUnavailable(f"HTTP {status}"))
            logger.warning("OpenID Connect token request refused: status %s", status)
            return _page(
                request,
                400,
                "sign_in_failed",
                f"The identity provider refused to complete this sign-in (status {status});"
                f" the link may have been used already. {START_AGAIN}",
            )
        except requests.RequestException as error:
            return _provider_down(request, ProviderUnavailable(type(error).__name__))
        except IdentityRefused as refusal:
            logger.warning("OpenID Connect identity refused: %s", refusal)
            return _page(request, 403, "sign_in_refused", f"Sign-in refused: {refusal}.")
        except SuspiciousOperation as error:
            logger.warning("OpenID Connect callback refused: %s", error)
            return _page(
                request,
                400,
                "sign_in_failed",
                f"This sign-in could not be verified: {_reason(error)}. {START_AGAIN}",
            )
        return response

    def login_failure(self) -> HttpResponse:
        error = self.request.GET.get("error", "")
        if error:
            safe = "".join(char for char in error[:64] if char.isalnum() or char in "_-")
            return _page(
                self.request,
                403,
                "sign_in_refused",
                f"The identity provider did not sign you in ({safe}). {START_AGAIN}",
            )
        return _page(
            self.request,
            400,
            "sign_in_failed",
            f"This sign-in has expired, was already used or was not started here. {START_AGAIN}",
        )


def _reason(error: SuspiciousOperation) -> str:
    text = str(error)
    if "state" in text:
        return "its state does not match a sign-in started from this browser"
    if "JWKS" in text or "signature" in text.lower() or "verification failed" in text:
        return "the ID token is not signed by a key the identity provider publishes"
    return text.rstrip(".")[:200]
