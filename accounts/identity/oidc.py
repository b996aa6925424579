"""Sign-in through OpenID Connect (mozilla-django-oidc), with the provider's groups applied.

Enabled when ``REPO_SEARCH_OIDC_ISSUER`` (or the endpoint settings) and a client id and secret
are set (``REPO_SEARCH_OIDC_ENABLED``). The authorization-code flow with PKCE starts at
``/oidc/authenticate/`` and returns to ``/oidc/callback/`` (``oidc_views``). This backend:

- names the account by ``REPO_SEARCH_OIDC_USERNAME_CLAIM`` (default ``preferred_username``),
  creating it (without a password) on first sign-in;
- refuses to take over an account that signs in with a password here: an IdP user who happens
  to be called ``admin`` does not become the local administrator;
- checks the ID token's signature against the provider's JWKS (RS256 by default), and its
  issuer and audience, which mozilla-django-oidc leaves unchecked;
- makes the account's Django groups those of ``REPO_SEARCH_OIDC_GROUPS_CLAIM`` (default
  ``groups``) at every sign-in, added and removed (``groups.sync_groups``), so an IdP group
  ``reposearch-admin`` makes an administrator and leaving it demotes at the next sign-in; with
  the claim set empty (a provider without groups, e.g. Google) groups are left to the admin.
"""

from __future__ import annotations

import logging
from typing import Any

import jwt
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import SuspiciousOperation
from mozilla_django_oidc.auth import OIDCAuthenticationBackend

from accounts.identity.groups import (
    IdentityRefused,
    clean_group_names,
    clean_username,
    record_account_created,
    sync_groups,
)
from accounts.identity.oidc_provider import normalized_issuer, provider_endpoints

logger = logging.getLogger(__name__)


def oidc_enabled() -> bool:
    return bool(getattr(settings, "REPO_SEARCH_OIDC_ENABLED", False))


class GroupSyncingOIDCBackend(OIDCAuthenticationBackend):  # type: ignore[misc]
    """mozilla-django-oidc's backend, naming users by a claim and syncing their groups."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Django builds every backend for every sign-in (passwords too): no settings are
        # required and nothing is fetched until an OpenID Connect callback arrives.
        self.UserModel = get_user_model()
        self.issuer = ""

    def authenticate(self, request: Any, **credentials: Any) -> Any:
        nonce = credentials.pop("nonce", None)
        code_verifier = credentials.pop("code_verifier", None)
        if credentials or request is None or not oidc_enabled():
            return None  # a password or reverse-proxy sign-in, not a callback
        endpoints = provider_endpoints()
        self.issuer = endpoints.issuer
        self.OIDC_OP_TOKEN_ENDPOINT = endpoints.token_endpoint
        self.OIDC_OP_USER_ENDPOINT = endpoints.userinfo_endpoint
        self.OIDC_OP_JWKS_ENDPOINT = endpoints.jwks_uri
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID
        self.OIDC_RP_CLIENT_SECRET = settings.OIDC_RP_CLIENT_SECRET
        self.OIDC_RP_SIGN_ALGO = settings.OIDC_RP_SIGN_ALGO
        self.OIDC_RP_IDP_SIGN_KEY = getattr(settings, "OIDC_RP_IDP_SIGN_KEY", None)
        return super().authenticate(request, nonce=nonce, code_verifier=code_verifier)

    # --- The ID token ---------------------------------------------------------------------
    def verify_token(self, token: str, **kwargs: Any) -> Any:
        try:
            payload = super().verify_token(token, **kwargs)
        except jwt.PyJWTError as error:
            raise SuspiciousOperation(f"the ID token was refused ({error})") from None
        if not isinstance(payload, dict):
            raise SuspiciousOperation("the ID token carries no claims")
        if "nonce" in kwargs:  # the ID token itself, not a signed userinfo answer
            self._check_issuer_and_audience(payload)
        return payload

    def _check_issuer_and_audience(self, payload: dict[str, Any]) -> None:
        if self.issuer and normalized_issuer(str(payload.get("iss", ""))) != self.issuer:
            raise SuspiciousOperation("the ID token was issued by another provider")
        audience = payload.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        if self.OIDC_RP_CLIENT_ID not in audiences:
            raise SuspiciousOperation("the ID token was issued to another client")

    def get_userinfo(self, access_token: str, id_token: str, payload: dict[str, Any]) -> Any:
        """The ID token's claims, completed by the userinfo endpoint's when there is one."""
        claims = dict(payload)
        if self.OIDC_OP_USER_ENDPOINT:
            userinfo = super().get_userinfo(access_token, id_token, payload)
            if not isinstance(userinfo, dict):
                raise SuspiciousOperation("the userinfo endpoint answered no claims")
            if userinfo.get("sub") != payload.get("sub"):
                raise SuspiciousOperation("the userinfo answer is about another subject")
            claims.update(userinfo)
        return claims

    # --- The account ----------------------------------------------------------------------
    def username_of(self, claims: dict[str, Any]) -> str:
        claim: str = settings.REPO_SEARCH_OIDC_USERNAME_CLAIM
        return clean_username(claims.get(claim), f"the identity provider's {claim!r} claim")

    def groups_of(self, claims: dict[str, Any]) -> list[str]:
        claim: str = settings.REPO_SEARCH_OIDC_GROUPS_CLAIM
        if not claim:
            return []
        raw = claims.get(claim) or []
        if isinstance(raw, str):
            raw = [raw]
        if not isinstance(raw, list):
            raise IdentityRefused(f"the identity provider's {claim!r} claim is not a list")
        return clean_group_names(raw, f"the identity provider's {claim!r} claim")

    def verify_claims(self, claims: dict[str, Any]) -> bool:
        self.username_of(claims)
        self.groups_of(claims)
        return True

    def filter_users_by_claims(self, claims: dict[str, Any]) -> Any:
        return self.UserModel.objects.filter(username=self.username_of(claims))

    def create_user(self, claims: dict[str, Any]) -> Any:
        username = self.username_of(claims)
        user = self.UserModel.objects.create_user(username, email=_email(claims))
        record_account_created(user, "oidc", self._address())
        self._sync_groups(user, claims)
        return user

    def update_user(self, user: Any, claims: dict[str, Any]) -> Any:
        if not user.is_active:
            raise IdentityRefused(f"the account {user.get_username()!r} is deactivated here")
        if user.has_usable_password():
            raise IdentityRefused(
                f"an account named {user.get_username()!r} already exists here and signs in with"
                " a password; an administrator can let it sign in through the identity provider"
                " instead (docs/operators/tls-and-sign-in.md)"
            )
        email = _email(claims)
        if email and email != user.email:
            user.email = email
            user.save(update_fields=["email"])
        self._sync_groups(user, claims)
        return user

    def _sync_groups(self, user: Any, claims: dict[str, Any]) -> None:
        if settings.REPO_SEARCH_OIDC_GROUPS_CLAIM:  # empty: groups are managed in the admin
            sync_groups(user, self.groups_of(claims), source="oidc", address=self._address())

    def _address(self) -> str | None:
        request = getattr(self, "request", None)
        return request.META.get("REMOTE_ADDR") if request is not None else None


def _email(claims: dict[str, Any]) -> str:
    email = claims.get("email")
    return email[:254] if isinstance(email, str) else ""
