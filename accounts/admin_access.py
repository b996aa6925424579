"""Who may use the Django admin's pages: reposearch administrators, by their role.

Django opens its admin to accounts with ``is_staff`` (``accounts.roles.grant_role`` keeps it set
for administrators) and lets each of them do what their model permissions allow. reposearch
decides from roles instead: an account holding the ``admin`` role may do on every page what a
superuser may (each page's own limits still apply: no one adds a token or changes an audit entry
here). Another staff account keeps whatever Django permissions a superuser gave it.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from accounts.roles import Role, role_of


def is_administrator(request: HttpRequest) -> bool:
    """Whether the signed-in account holds the ``admin`` role (superusers do)."""
    return role_of(getattr(request, "user", None)) == Role.ADMIN


class AdministratorsManage:
    """``ModelAdmin`` mixin (first among the bases): administrators may view, add, change and
    delete; anyone else as Django's model permissions say."""

    def has_module_permission(self, request: HttpRequest) -> bool:
        return is_administrator(request) or super().has_module_permission(request)  # type: ignore[misc]

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return is_administrator(request) or super().has_view_permission(request, obj)  # type: ignore[misc]

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        # An inline's takes the parent object too.
        return is_administrator(request) or super().has_add_permission(request, *args)  # type: ignore[misc]

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return is_administrator(request) or super().has_change_permission(request, obj)  # type: ignore[misc]

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return is_administrator(request) or super().has_delete_permission(request, obj)  # type: ignore[misc]
