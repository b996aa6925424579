"""Roles: what an account may do. ``read`` < ``write`` < ``admin``.

A role is membership of a Django group (``ROLE_GROUPS``), so the People page, ``manage.py role``,
the admin, the reverse-proxy header and OpenID Connect group claims all grant roles the same way;
superusers are administrators. The role groups exist from migration ``accounts.0003`` (and are
made again when a role is granted, should someone delete one). A token's scope narrows its
user's role, never widens it. Administrators open Django's admin: ``is_staff`` is set when an
account becomes one and cleared when it stops being one (``keep_staff_in_step``), whichever way
the role changed; what they may do there comes from the role (``accounts.admin_access``).

There is no ``reposearch-read`` group, on purpose: every active account reads, so a read group
would be one every account must join (accounts made at sign-in by a proxy or an identity
provider included) and whose absence would mean nothing. "Revoking" a role is leaving the role
groups, which is being a reader. Deactivating an account (``is_active``) is how one stops it
reading. Every other group is a repository visibility group (``accounts.visibility``).
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any

SHOWN_VALUE_LENGTH = 20  # of an unknown role's name quoted in the refusal


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
            # The value comes from whoever asked, at any length; the message goes to pages,
            # the API and the audit log.
            shown = value if len(value) <= SHOWN_VALUE_LENGTH else value[:SHOWN_VALUE_LENGTH] + "…"
            raise ValueError(f"unknown role {shown!r}: expected read, write or admin") from None


ROLE_NAMES = ("read", "write", "admin")
# Group name -> the role its members hold.
ROLE_GROUPS = {"reposearch-write": Role.WRITE, "reposearch-admin": Role.ADMIN}
GROUP_OF_ROLE = {role: name for name, role in ROLE_GROUPS.items()}


def is_role_group(name: str) -> bool:
    """Whether the group ``name`` grants a role (rather than restricting repositories)."""
    return name in ROLE_GROUPS


def role_from_group_names(names: set[str] | frozenset[str], is_superuser: bool = False) -> Role:
    """The role of an active account in the groups ``names`` (for lists read in one query)."""
    if is_superuser:
        return Role.ADMIN
    return max((ROLE_GROUPS[name] for name in names if name in ROLE_GROUPS), default=Role.READ)


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
    role = role_from_group_names(names)
    user._reposearch_role = role
    return role


def _holds_admin(user: Any) -> bool:
    """From the database, not the role cached on ``user`` (``role_of``): a role being changed."""
    return bool(user.is_superuser or user.groups.filter(name=GROUP_OF_ROLE[Role.ADMIN]).exists())


def keep_staff_in_step(user: Any, was_admin: bool) -> None:
    """Set ``is_staff`` (Django's "may open the admin") on an account that is an administrator
    now, clear it on one that just stopped being one; leave it alone otherwise (a superuser may
    open the admin to another account). ``was_admin``: whether it was one before the change."""
    is_admin = _holds_admin(user)
    staff = True if is_admin else (False if was_admin else user.is_staff)
    if staff != user.is_staff:
        user.is_staff = staff
        user.save(update_fields=["is_staff"])


def grant_role(user: Any, role: Role) -> None:
    """Make ``user`` hold exactly ``role`` (through the role groups), ``is_staff`` in step."""
    from django.contrib.auth.models import Group

    was_admin = _holds_admin(user)
    for name in ROLE_GROUPS:
        user.groups.remove(*Group.objects.filter(name=name))
    if role in GROUP_OF_ROLE:
        group, _ = Group.objects.get_or_create(name=GROUP_OF_ROLE[role])
        user.groups.add(group)
    keep_staff_in_step(user, was_admin)
    if hasattr(user, "_reposearch_role"):
        del user._reposearch_role
