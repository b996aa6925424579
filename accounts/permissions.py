"""Who may call which API operation: a role per HTTP method, checked on every view.

Views declare ``required_roles`` (method -> ``Role``) where the default does not fit; by default
reads (GET, HEAD, OPTIONS) need ``read`` and every other method ``write``. Search and ask are
POSTs but reads. ``REPO_SEARCH_ANONYMOUS_READ=1`` lets anonymous requests through where
``read`` is enough, unless the view sets ``anonymous_read = False`` (a personal resource such
as tokens); writes are never anonymous. Anonymous and refused requests get 401 (with
``WWW-Authenticate: Bearer``), signed-in ones without the role 403.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
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
            self.message = f"this needs the {needed.label} role; you act as {role.label}"
            return False
        return True
