"""Where the OpenID Connect provider's endpoints are: from settings, or its discovery document.

With ``REPO_SEARCH_OIDC_ISSUER`` set, the authorization, token, userinfo and JWKS endpoints are
read from ``<issuer>/.well-known/openid-configuration`` when first needed (not at start-up: a
provider that is down must not stop reposearch from starting) and kept for an hour; an endpoint
set explicitly (``REPO_SEARCH_OIDC_TOKEN_ENDPOINT``, ...) wins over the discovered one.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

import requests
from django.conf import settings

DISCOVERY_TTL_SECS = 3600.0
_cache: dict[str, tuple[float, dict[str, Any]]] = {}
_lock = threading.Lock()


class ProviderUnavailable(RuntimeError):
    """The identity provider could not be reached or answered something unusable."""


@dataclass(frozen=True)
class ProviderEndpoints:
    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    userinfo_endpoint: str
    jwks_uri: str


def normalized_issuer(issuer: str) -> str:
    return issuer.strip().rstrip("/")


def _discover(issuer: str) -> dict[str, Any]:
    url = normalized_issuer(issuer) + "/.well-known/openid-configuration"
    with _lock:
        cached = _cache.get(url)
        if cached and time.monotonic() - cached[0] < DISCOVERY_TTL_SECS:
            return cached[1]
    try:
        response = requests.get(url, timeout=settings.OIDC_TIMEOUT, verify=settings.OIDC_VERIFY_SSL)
        response.raise_for_status()
        document = response.json()
    except requests.RequestException as error:
        raise ProviderUnavailable(
            f"the identity provider at {normalized_issuer(issuer)} did not answer its discovery"
            f" document ({type(error).__name__})"
        ) from error
    except ValueError:
        raise ProviderUnavailable(
            f"the identity provider at {normalized_issuer(issuer)} answered a discovery document"
            " that is not JSON"
        ) from None
    if not isinstance(document, dict):
        raise ProviderUnavailable(f"the discovery document at {url} is not a JSON object")
    if normalized_issuer(str(document.get("issuer", ""))) != normalized_issuer(issuer):
        raise ProviderUnavailable(
            f"the discovery document at {url} names another issuer"
            f" ({str(document.get('issuer'))[:200]!r}); check REPO_SEARCH_OIDC_ISSUER"
        )
    with _lock:
        _cache[url] = (time.monotonic(), document)
    return document


def forget_discovery() -> None:
    """Drop the cached discovery documents (a provider moved; tests)."""
    with _lock:
        _cache.clear()


def provider_endpoints() -> ProviderEndpoints:
    """The provider's endpoints; ``ProviderUnavailable`` when discovery fails."""
    issuer: str = settings.REPO_SEARCH_OIDC_ISSUER
    explicit = {
        "authorization_endpoint": settings.OIDC_OP_AUTHORIZATION_ENDPOINT,
        "token_endpoint": settings.OIDC_OP_TOKEN_ENDPOINT,
        "userinfo_endpoint": settings.OIDC_OP_USER_ENDPOINT,
        "jwks_uri": settings.OIDC_OP_JWKS_ENDPOINT,
    }
    discovered: dict[str, Any] = {}
    if issuer and not all(explicit.values()):
        discovered = _discover(issuer)
    values: dict[str, str] = {}
    for name, value in explicit.items():
        found = value or discovered.get(name) or ""
        if not isinstance(found, str):
            raise ProviderUnavailable(f"the provider's discovery document has a bad {name}")
        values[name] = found
    for name in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
        if not values[name]:
            raise ProviderUnavailable(f"the identity provider publishes no {name}")
    return ProviderEndpoints(issuer=normalized_issuer(issuer), **values)
