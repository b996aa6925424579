"""Identities from outside: user names and group names checked, and groups made to match.

The reverse-proxy header and OpenID Connect claims name a user and their groups; both come here
so they are checked and applied one way. A group name passes through
``REPO_SEARCH_IDENTITY_GROUP_MAP`` (``idp-name=django-name``; unmapped names are kept as they
are), so an identity provider's group can grant a role group (``reposearch-write``,
``reposearch-admin``) or a repository visibility group. The provider is the truth for the
groups of the accounts it signs in: groups it no longer names are removed at the next sign-in.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction

logger = logging.getLogger(__name__)

MAX_USERNAME_LENGTH = 150  # django.contrib.auth.models.User.username
MAX_GROUP_NAME_LENGTH = 150  # django.contrib.auth.models.Group.name
MAX_GROUPS = 200
# The characters Django's own user-name validator (UnicodeUsernameValidator) allows.
USERNAME_PATTERN = re.compile(r"^[\w.@+-]+\Z")


class IdentityRefused(ValueError):
    """An identity from a proxy or a provider that cannot be used; the message says why."""


def clean_username(raw: object, source: str) -> str:
    """``raw`` as a user name, or ``IdentityRefused`` naming ``source`` and the problem."""
    if not isinstance(raw, str) or not raw.strip():
        raise IdentityRefused(f"{source} gave no user name")
    name = unicodedata.normalize("NFC", raw.strip())
    if len(name) > MAX_USERNAME_LENGTH:
        raise IdentityRefused(
            f"{source} gave a user name longer than {MAX_USERNAME_LENGTH} characters"
        )
    if not USERNAME_PATTERN.match(name):
        raise IdentityRefused(
            f"{source} gave a user name with characters other than letters, digits and @.+-_"
        )
    return name


def clean_group_names(raw: Iterable[object], source: str) -> list[str]:
    """The group names in ``raw`` (blank ones dropped), or ``IdentityRefused``."""
    names: list[str] = []
    for item in raw:
        if not isinstance(item, str):
            raise IdentityRefused(f"{source} gave a group that is not a string")
        name = unicodedata.normalize("NFC", item.strip())
        if not name:
            continue
        if len(name) > MAX_GROUP_NAME_LENGTH:
            raise IdentityRefused(
                f"{source} gave a group name longer than {MAX_GROUP_NAME_LENGTH} characters"
            )
        if any(unicodedata.category(char).startswith("C") for char in name):
            raise IdentityRefused(f"{source} gave a group name with control characters")
        names.append(name)
    if len(names) > MAX_GROUPS:
        raise IdentityRefused(f"{source} gave more than {MAX_GROUPS} groups")
    return names


def parse_group_map(entries: Iterable[str]) -> dict[str, str]:
    """``["idp=django", ...]`` as a mapping; ``ValueError`` naming a malformed entry."""
    mapping: dict[str, str] = {}
    for entry in entries:
        outside, sep, inside = entry.partition("=")
        if not sep or not outside.strip() or not inside.strip():
            raise ValueError(f"{entry!r} is not of the form idp-group=django-group")
        mapping[outside.strip()] = inside.strip()
    return mapping


def mapped_group_names(names: Iterable[str]) -> set[str]:
    """``names`` after ``REPO_SEARCH_IDENTITY_GROUP_MAP``."""
    mapping: dict[str, str] = getattr(settings, "REPO_SEARCH_IDENTITY_GROUP_MAP", {})
    return {mapping.get(name, name) for name in names}


@dataclass(frozen=True)
class GroupChanges:
    added: tuple[str, ...]
    removed: tuple[str, ...]

    def __bool__(self) -> bool:
        return bool(self.added or self.removed)


def record_account_created(user: Any, source: str, address: str | None) -> None:
    from accounts.audit import record

    logger.info("account created user=%s source=%s", user.get_username(), source)
    record(
        "account.create",
        user=user,
        address=address,
        target=user.get_username(),
        details={"source": source},
    )


@transaction.atomic
def sync_groups(
    user: Any, names: Iterable[str], source: str, address: str | None = None
) -> GroupChanges:
    """Make ``user``'s groups exactly ``names`` (mapped; created when new), audited."""
    from django.contrib.auth.models import Group

    from accounts.audit import record
    from accounts.roles import GROUP_OF_ROLE, Role, keep_staff_in_step

    wanted = mapped_group_names(names)
    held = set(user.groups.values_list("name", flat=True))
    was_admin = user.is_superuser or GROUP_OF_ROLE[Role.ADMIN] in held
    added = sorted(wanted - held)
    removed = sorted(held - wanted)
    if removed:
        user.groups.remove(*Group.objects.filter(name__in=removed))
    for name in added:
        user.groups.add(Group.objects.get_or_create(name=name)[0])
    keep_staff_in_step(user, was_admin)  # an administrator opens the admin, a former one not
    if hasattr(user, "_reposearch_role"):
        del user._reposearch_role  # accounts.roles caches the role on the instance
    changes = GroupChanges(tuple(added), tuple(removed))
    if changes:
        logger.info(
            "identity groups synced user=%s source=%s added=%s removed=%s",
            user.get_username(),
            source,
            ",".join(added) or "-",
            ",".join(removed) or "-",
        )
        record(
            "account.groups_sync",
            user=user,
            address=address,
            target=user.get_username(),
            details={"source": source, "added": added, "removed": removed},
        )
    return changes
