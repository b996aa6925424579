"""Roles: what an account may do. ``read`` < ``write`` < ``admin``.

A role is membership of a Django group (``ROLE_GROUPS``), so the admin, the reverse-proxy header
and OpenID Connect group claims all grant roles the same way; superusers are administrators.
Any other signed-in account can read. A token's scope narrows its user's role, never widens it.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any


class Role(IntEnum):
    READ = 1
    WRITE = 2
    ADMIN = 3

    @property
    def label(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, value: str) -> Role:
        try:
            return cls[value.upper()]
        except KeyError:
            raise ValueError(f"unknown role {value!r}: expected read, write or admin") from None


ROLE_NAMES = ("read", "write", "admin")
# Group name -> the role its members hold.
ROLE_GROUPS = {"reposearch-write": Role.WRITE, "reposearch-admin": Role.ADMIN}
GROUP_OF_ROLE = {role: name for name, role in ROLE_GROUPS.items()}


def role_of(user: Any) -> Role | None:
    """The role of a Django user; ``None`` for anonymous or inactive users."""
    if user is None or not getattr(user, "is_authenticated", False) or not user.is_active:
        return None
    if user.is_superuser:
        return Role.ADMIN
    cached = getattr(user, "_reposearch_role", None)
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    names = set(user.groups.filter(name__in=list(ROLE_GROUPS)).values_list("name", flat=True))
    role = max((ROLE_GROUPS[name] for name in names), default=Role.READ)
    user._reposearch_role = role
    return role


def grant_role(user: Any, role: Role) -> None:
    """Make ``user`` hold exactly ``role`` (through the role groups)."""
    from django.contrib.auth.models import Group

    for name in ROLE_GROUPS:
        user.groups.remove(*Group.objects.filter(name=name))
    if role in GROUP_OF_ROLE:
        group, _ = Group.objects.get_or_create(name=GROUP_OF_ROLE[role])
        user.groups.add(group)
    if hasattr(user, "_reposearch_role"):
        del user._reposearch_role
