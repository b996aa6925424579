"""Lists of people and visibility groups, each read in a fixed number of queries.

``people()`` gives every account with its role, its visibility groups, whether it is active and
how many usable tokens it has (the ``manage.py users`` table and the People page);
``visibility_groups()`` every group that is not a role group, with its members and how many
repositories it restricts.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db.models import Count, Prefetch, Q
from django.utils import timezone

from accounts.roles import ROLE_GROUPS, Role, role_from_group_names


@dataclass(frozen=True)
class Person:
    user: Any
    role: Role
    groups: tuple[str, ...]  # visibility groups, by name
    tokens: int  # usable: not revoked, not expired

    @property
    def username(self) -> str:
        return str(self.user.get_username())

    @property
    def is_active(self) -> bool:
        return bool(self.user.is_active)

    @property
    def is_superuser(self) -> bool:
        return bool(self.user.is_superuser)

    @property
    def last_login(self) -> datetime | None:
        return self.user.last_login  # type: ignore[no-any-return]


def _usable_tokens() -> Q:
    now = timezone.now()
    return Q(api_tokens__revoked_at__isnull=True) & (
        Q(api_tokens__expires_at__isnull=True) | Q(api_tokens__expires_at__gt=now)
    )


def people(usernames: list[str] | None = None) -> list[Person]:
    """Every account (or those named), by user name."""
    rows = (
        get_user_model()
        .objects.annotate(usable_tokens=Count("api_tokens", filter=_usable_tokens(), distinct=True))
        .prefetch_related(Prefetch("groups", queryset=Group.objects.order_by("name")))
        .order_by("username")
    )
    if usernames is not None:
        rows = rows.filter(username__in=usernames)
    listed = []
    for user in rows:
        names = [group.name for group in user.groups.all()]
        listed.append(
            Person(
                user=user,
                role=role_from_group_names(set(names), is_superuser=user.is_superuser),
                groups=tuple(name for name in names if name not in ROLE_GROUPS),
                tokens=user.usable_tokens,
            )
        )
    return listed


def person(user: Any) -> Person:
    return people([user.get_username()])[0]


@dataclass(frozen=True)
class VisibilityGroup:
    name: str
    members: tuple[str, ...]
    repositories: int  # repositories restricted to this group (among others, maybe)


def visibility_groups() -> list[VisibilityGroup]:
    """Every group that is not a role group, by name."""
    user_model = get_user_model()
    rows = (
        Group.objects.exclude(name__in=list(ROLE_GROUPS))
        .annotate(repositories=Count("visible_repositories", distinct=True))
        .prefetch_related(Prefetch("user_set", queryset=user_model.objects.order_by("username")))
        .order_by("name")
    )
    return [
        VisibilityGroup(
            name=group.name,
            members=tuple(user.get_username() for user in group.user_set.all()),
            repositories=group.repositories,
        )
        for group in rows
    ]
