"""Tokens an administrator (or an operator) makes or revokes for another account.

The secret is returned once, as ``accounts.tokens.create_token`` returns it; the token's scope is
capped by its owner's role, like every token. Audited as ``token.create`` / ``token.revoke`` with
the owner named, the acting administrator as the actor.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from accounts.actors import Actor
from accounts.errors import PeopleRefused, UnknownToken
from accounts.models import ApiToken
from accounts.services.protected_accounts import check_may_change
from accounts.services.roles import held_role, parse_role
from accounts.tokens import NewToken, TokenRefused, create_token, revoke_token


def create_token_for(
    actor: Actor,
    user: Any,
    name: str,
    scope: str = "read",
    expires_in_days: int | None = None,
) -> NewToken:
    """A new token of ``user``; refuses a scope above the owner's role, an inactive owner, and a
    superuser's or another administrator's account to an administrator who is not a superuser
    (a token acts as its owner: ``accounts.services.protected_accounts``)."""
    actor.ensure_admin("making a token for an account")
    check_may_change(actor, user)
    owner = user.get_username()
    wanted = parse_role(scope)
    held = held_role(user)
    if not user.is_active:
        raise PeopleRefused(f"{owner} is not active: activate the account first", code="inactive")
    if wanted > held:
        raise PeopleRefused(
            f"scope: {wanted.label} is above {owner}'s role ({held.label}); grant the role first",
            code="scope_above_role",
        )
    try:
        made = create_token(user, name, wanted.label, expires_in_days)
    except TokenRefused as error:
        raise PeopleRefused(str(error), code="invalid_token") from None
    actor.record(
        "token.create",
        str(made.token.pk),
        {"name": made.token.name, "scope": made.token.scope, "owner": owner},
    )
    return made


def usable_tokens(user: Any) -> QuerySet[ApiToken]:
    """``user``'s tokens not revoked (expired ones included: they can still be revoked)."""
    return ApiToken.objects.filter(user=user, revoked_at__isnull=True).order_by("created_at")


def find_token(user: Any, reference: str) -> ApiToken:
    """``user``'s unrevoked token by id or by name; a name several share is refused."""
    reference = str(reference).strip()
    rows = usable_tokens(user)
    if reference.isdigit():
        token = rows.filter(pk=int(reference)).first()
        if token is not None:
            return token
    named = list(rows.filter(name=reference))
    if len(named) == 1:
        return named[0]
    if len(named) > 1:
        ids = ", ".join(str(token.pk) for token in named)
        raise PeopleRefused(
            f"{user.get_username()} has {len(named)} tokens named {reference!r} (ids {ids}): "
            "name one by its id",
            code="ambiguous_token",
        )
    raise UnknownToken(
        f"{user.get_username()} has no unrevoked token {reference!r}",
        details={"token": reference},
    )


def revoke_token_for(actor: Actor, token: ApiToken) -> bool:
    """Revoke ``token`` (anyone's); False when it was revoked already (nothing recorded)."""
    actor.ensure_admin("revoking another account's token")
    if token.revoked_at is not None:
        return False
    children = revoke_token(token)
    details: dict[str, Any] = {
        "name": token.name,
        "scope": token.scope,
        "owner": token.user.get_username(),
    }
    if children:
        details["revoked_with_it"] = children
    actor.record("token.revoke", str(token.pk), details)
    return True
