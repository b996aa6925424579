"""Settings for signing in through the team's identity provider: a trusted reverse proxy's user
header, or OpenID Connect (``accounts.identity``, docs/operators/tls-and-sign-in.md). Part of
``base.py``, which imports every name here; values come from ``env.py`` and are checked at start.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from accounts.identity.groups import parse_group_map
from accounts.identity.proxies import parse_networks

from .env import ConfigError, reader

env = reader()

# --- Sign-in from the team's identity provider (docs/operators/tls-and-sign-in.md) ---------
# Reverse proxies whose X-Forwarded-* and user header are believed (IPs/CIDRs; empty: none).
REPO_SEARCH_TRUSTED_PROXIES = env.csv("REPO_SEARCH_TRUSTED_PROXIES", "")
try:
    _trusted_proxy_networks = parse_networks(REPO_SEARCH_TRUSTED_PROXIES)
    REPO_SEARCH_IDENTITY_GROUP_MAP = parse_group_map(env.csv("REPO_SEARCH_IDENTITY_GROUP_MAP", ""))
except ValueError as _error:
    raise ConfigError(f"REPO_SEARCH_TRUSTED_PROXIES / _IDENTITY_GROUP_MAP: {_error}") from None
REPO_SEARCH_REMOTE_USER_HEADER = env.text("REPO_SEARCH_REMOTE_USER_HEADER", "")
REPO_SEARCH_REMOTE_GROUPS_HEADER = env.text("REPO_SEARCH_REMOTE_GROUPS_HEADER", "")
if REPO_SEARCH_REMOTE_USER_HEADER and not _trusted_proxy_networks:
    raise ConfigError(
        "REPO_SEARCH_REMOTE_USER_HEADER is set but REPO_SEARCH_TRUSTED_PROXIES is empty: list the"
        " reverse proxies allowed to send it, or anyone could name any user"
    )
REPO_SEARCH_OIDC_ISSUER = env.text("REPO_SEARCH_OIDC_ISSUER", "")
OIDC_OP_AUTHORIZATION_ENDPOINT = env.text("REPO_SEARCH_OIDC_AUTHORIZATION_ENDPOINT", "")
OIDC_OP_TOKEN_ENDPOINT = env.text("REPO_SEARCH_OIDC_TOKEN_ENDPOINT", "")
OIDC_OP_USER_ENDPOINT = env.text("REPO_SEARCH_OIDC_USERINFO_ENDPOINT", "")
OIDC_OP_JWKS_ENDPOINT = env.text("REPO_SEARCH_OIDC_JWKS_ENDPOINT", "")
OIDC_RP_CLIENT_ID = env.text("REPO_SEARCH_OIDC_CLIENT_ID", "")
OIDC_RP_CLIENT_SECRET = env.text("REPO_SEARCH_OIDC_CLIENT_SECRET", "")
OIDC_RP_SIGN_ALGO = env.choice("REPO_SEARCH_OIDC_SIGN_ALGO", "RS256", ("rs256", "es256", "hs256"))
OIDC_RP_SIGN_ALGO = OIDC_RP_SIGN_ALGO.upper()
OIDC_RP_SCOPES = env.text("REPO_SEARCH_OIDC_SCOPES", "openid email profile")
OIDC_USE_PKCE = env.flag("REPO_SEARCH_OIDC_USE_PKCE", True)
OIDC_TIMEOUT = env.positive_float("REPO_SEARCH_OIDC_TIMEOUT_SECS", 10.0)
# A CA bundle for a provider with a private certificate authority; else the system's.
OIDC_VERIFY_SSL: bool | str = env.text("REPO_SEARCH_OIDC_CA_BUNDLE", "") or True
REPO_SEARCH_OIDC_USERNAME_CLAIM = env.text("REPO_SEARCH_OIDC_USERNAME_CLAIM", "preferred_username")
# Empty (REPO_SEARCH_OIDC_GROUPS_CLAIM=-): the provider sends no groups; they are set in the admin.
_groups_claim = env.text("REPO_SEARCH_OIDC_GROUPS_CLAIM", "groups")
REPO_SEARCH_OIDC_GROUPS_CLAIM = "" if _groups_claim == "-" else _groups_claim
_oidc_endpoints = (
    OIDC_OP_AUTHORIZATION_ENDPOINT and OIDC_OP_TOKEN_ENDPOINT and OIDC_OP_JWKS_ENDPOINT
)
_oidc_parts = (REPO_SEARCH_OIDC_ISSUER or _oidc_endpoints, OIDC_RP_CLIENT_ID, OIDC_RP_CLIENT_SECRET)
# For the sign-in page: show "Sign in with <REPO_SEARCH_OIDC_PROVIDER_NAME>" linking to
# reverse("oidc_authentication_init") (/oidc/authenticate/) when this is on.
REPO_SEARCH_OIDC_ENABLED = all(_oidc_parts)
if any(_oidc_parts) and not REPO_SEARCH_OIDC_ENABLED:
    raise ConfigError(
        "OpenID Connect is half configured: set REPO_SEARCH_OIDC_ISSUER (or the authorization,"
        " token and JWKS endpoints), REPO_SEARCH_OIDC_CLIENT_ID and REPO_SEARCH_OIDC_CLIENT_SECRET"
    )
REPO_SEARCH_OIDC_PROVIDER_NAME = env.text(
    "REPO_SEARCH_OIDC_PROVIDER_NAME",
    urlsplit(REPO_SEARCH_OIDC_ISSUER or OIDC_OP_AUTHORIZATION_ENDPOINT).hostname
    or "single sign-on",
)
