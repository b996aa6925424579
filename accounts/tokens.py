"""Personal API tokens: created (the secret shown once), checked, listed and revoked.

A secret is ``rs_`` + 40 URL-safe characters; the database keeps its SHA-256 digest (secrets
this long need no slow hash) and the first characters for display. A token's scope is capped by
its user's role at every use, so demoting a user demotes their tokens at once.

A token made by a request that a token authenticated is that token's child (``parent``): its
scope is at most the parent's (as capped at that moment), it expires no later than the parent
(without an expiry of its own it takes the parent's), and revoking a token revokes its
descendants; a token whose ancestor is revoked or expired does not authenticate either.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.utils import timezone

from accounts.models import ApiToken, TokenScope
from accounts.roles import Role, role_of

TOKEN_MARK = "rs_"  # noqa: S105 - a marker that makes leaked tokens easy to spot, not a secret
MAX_EXPIRY_DAYS = 3650


class TokenRefused(ValueError):
    """A token request that cannot be granted (bad name, scope or expiry)."""


def digest_of(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class NewToken:
    token: ApiToken
    secret: str


def create_token(
    user: Any,
    name: str,
    scope: str = "read",
    expires_in_days: int | None = None,
    *,
    parent: ApiToken | None = None,
) -> NewToken:
    """A new token for ``user``; refuses a scope above the user's role, and with ``parent`` (the
    token the request came with) a scope or a lifetime beyond the parent's."""
    name = (name or "").strip()
    if not name or len(name) > 100:
        raise TokenRefused("name: give the token a name of 1 to 100 characters")
    try:
        wanted = Role.parse(scope)
    except ValueError as error:
        raise TokenRefused(f"scope: {error}") from None
    held = role_of(user)
    if held is None or wanted > held:
        raise TokenRefused(
            f"scope: {wanted.label} is above your role ({held.label if held else 'none'})"
        )
    expires_at = None
    if expires_in_days is not None:
        if not 1 <= expires_in_days <= MAX_EXPIRY_DAYS:
            raise TokenRefused(f"expires_in_days: between 1 and {MAX_EXPIRY_DAYS}")
        expires_at = timezone.now() + timedelta(days=expires_in_days)
    if parent is not None:
        expires_at = _within_parent(parent, user, wanted, expires_at)
    secret = TOKEN_MARK + secrets.token_urlsafe(30)
    token = ApiToken.objects.create(
        user=user,
        name=name,
        scope=TokenScope(wanted.label),
        prefix=secret[:8],
        digest=digest_of(secret),
        expires_at=expires_at,
        parent=parent,
    )
    return NewToken(token=token, secret=secret)


def _within_parent(parent: ApiToken, user: Any, wanted: Role, expires_at: Any) -> Any:
    """The child's expiry (the parent's when it has none); refuses what exceeds the parent."""
    if parent.user_id != user.pk:
        raise TokenRefused("parent: a token makes tokens for its own account only")
    ceiling = effective_role(parent)
    if ceiling is None or wanted > ceiling:
        label = ceiling.label if ceiling else "none"
        raise TokenRefused(f"scope: {wanted.label} is above the token making it ({label})")
    if parent.expires_at is None:
        return expires_at
    if expires_at is None:
        return parent.expires_at
    if expires_at > parent.expires_at:
        raise TokenRefused(
            "expires_in_days: beyond the expiry of the token making it "
            f"({parent.expires_at:%Y-%m-%d %H:%M} UTC); ask for fewer days or none"
        )
    return expires_at


def token_for_secret(secret: str) -> ApiToken | None:
    """The usable token with this secret (its user active), or ``None``."""
    token = (
        ApiToken.objects.select_related("user", "parent")
        .filter(digest=digest_of(secret), revoked_at__isnull=True)
        .first()
    )
    if token is None or token.is_expired or not token.user.is_active:
        return None
    if not _ancestors_usable(token):
        return None
    now = timezone.now()
    # Recorded at most once a minute: a busy script does not write on every request.
    if token.last_used_at is None or now - token.last_used_at > timedelta(minutes=1):
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    return token


def effective_role(token: ApiToken) -> Role | None:
    """The token's scope capped by its user's current role."""
    held = role_of(token.user)
    if held is None:
        return None
    return min(held, Role.parse(token.scope))


def _ancestors_usable(token: ApiToken) -> bool:
    """Whether every token above ``token`` is unrevoked and unexpired (revocation cascades, so
    this only matters for a parent changed behind the services' back, or an expiry)."""
    ancestor = token.parent
    while ancestor is not None:
        if not ancestor.is_usable:
            return False
        ancestor = ancestor.parent
    return True


def revoke_token(token: ApiToken) -> list[int]:
    """Revoke ``token`` and every token it made (at any depth) that is not revoked yet; the ids
    of the descendants revoked with it."""
    now = timezone.now()
    if token.revoked_at is None:
        token.revoked_at = now
        token.save(update_fields=["revoked_at"])
    descendants: list[int] = []
    frontier = [token.pk]
    while frontier:
        frontier = list(
            ApiToken.objects.filter(parent_id__in=frontier).values_list("pk", flat=True)
        )
        descendants += frontier
    pending = ApiToken.objects.filter(pk__in=descendants, revoked_at__isnull=True)
    revoked = sorted(pending.values_list("pk", flat=True))
    ApiToken.objects.filter(pk__in=revoked).update(revoked_at=now)
    return revoked
