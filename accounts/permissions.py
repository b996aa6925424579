"""Who may call which API operation: a role per HTTP method, checked on every view.

Views declare ``required_roles`` (method -> ``Role``) where the default does not fit; by default
reads (GET, HEAD, OPTIONS) need ``read`` and every other method ``write``. Search and ask are
POSTs but reads. ``REPO_SEARCH_ANONYMOUS_READ=1`` lets anonymous requests through where
``read`` is enough, unless the view sets ``anonymous_read = False`` (a personal resource such
as tokens); writes are never anonymous. Anonymous and refused requests get 401 (with
``WWW-Authenticate: Bearer``), signed-in ones without the role 403, whose message says whether
the account's role or the token's scope fell short (tokens are ``read`` unless made wider), and
how to get a token that would do.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.urls import reverse
from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.request import Request

from accounts.models import ApiToken
from accounts.roles import Role, role_of
from accounts.tokens import effective_role


def request_role(request: Any) -> Role | None:
    """The role a request acts with: its token's scope capped by the user's role, or the
    session user's role; ``None`` when anonymous."""
    auth = getattr(request, "auth", None)
    if isinstance(auth, ApiToken):
        return effective_role(auth)
    return role_of(getattr(request, "user", None))


def required_role(view: Any, method: str) -> Role:
    declared: dict[str, Role] = getattr(view, "required_roles", {})
    if method in declared:
        return declared[method]
    return Role.READ if method in SAFE_METHODS else Role.WRITE


def role_refusal(request: Any, needed: Role, role: Role) -> str:
    """Why a signed-in request acting as ``role`` may not do what needs ``needed``: the token's
    scope when its account holds enough (with where to make a token of the needed scope), else
    the account's own role (not the token's scope, which may be smaller still)."""
    token = getattr(request, "auth", None)
    if isinstance(token, ApiToken):
        account = role_of(token.user)
        if account is not None and account >= needed:
            name = token.user.get_username()
            return (
                f"this needs the {needed.label} role; this token ({token.name!r}) has scope "
                f"{token.scope}, though its account {name} holds {account.label} (tokens have "
                f"scope read unless made with another): make a token with scope {needed.label} "
                f"on the Tokens page ({reverse('frontend:tokens')}) or with "
                f"'manage.py createtoken {name} NAME --scope {needed.label}'"
            )
        role = account or role  # the account falls short too: its role, not the token's scope
    return f"this needs the {needed.label} role; your account's role is {role.label}"


class RolePermission(BasePermission):
    message = "your account's role does not allow this"

    def has_permission(self, request: Request, view: Any) -> bool:
        needed = required_role(view, request.method or "GET")
        role = request_role(request)
        if role is None:
            return bool(
                needed == Role.READ
                and settings.REPO_SEARCH_ANONYMOUS_READ
                and getattr(view, "anonymous_read", True)
            )
        if role < needed:
            self.message = role_refusal(request, needed, role)
            return False
        return True
