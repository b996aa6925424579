"""Visibility groups: made, and accounts added to or removed from them.

A visibility group is any Django group that is not a role group: a repository restricted to
groups is visible to their members (and to administrators) only (``accounts.visibility``). The
role groups are refused here, so membership of them changes only through ``set_role``. Nothing
here deletes a group: a repository restricted to a deleted group alone would become visible to
every account.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import Group
from django.db import IntegrityError, transaction

from accounts.actors import Actor
from accounts.errors import PeopleRefused, UnknownGroup
from accounts.roles import ROLE_GROUPS, is_role_group

MAX_GROUP_NAME_LENGTH = 150  # django.contrib.auth.models.Group.name
RESERVED_PREFIX = "reposearch-"


def clean_group_name(raw: str) -> str:
    name = unicodedata.normalize("NFC", str(raw or "").strip())
    if not name:
        raise PeopleRefused("give the group a name", code="invalid_group")
    if len(name) > MAX_GROUP_NAME_LENGTH:
        raise PeopleRefused(
            f"a group name has at most {MAX_GROUP_NAME_LENGTH} characters", code="invalid_group"
        )
    if any(unicodedata.category(char).startswith("C") for char in name):
        raise PeopleRefused("a group name has no control characters", code="invalid_group")
    return name


def _refuse_role_group(name: str) -> None:
    if is_role_group(name):
        raise PeopleRefused(
            f"{name} is a role group: give or take the role instead "
            f"(manage.py role grant USER {ROLE_GROUPS[name].label}, or the People page)",
            code="role_group",
        )


def visibility_group(name: str) -> Group:
    """The visibility group called ``name``, or ``UnknownGroup`` (a role group is refused)."""
    name = str(name or "").strip()
    _refuse_role_group(name)
    group = Group.objects.filter(name=name).first()
    if group is None:
        if len(name) > MAX_GROUP_NAME_LENGTH:  # no group has it: say so without repeating it
            raise UnknownGroup(
                f"a group name has at most {MAX_GROUP_NAME_LENGTH} characters",
                details={"group": name[:MAX_GROUP_NAME_LENGTH] + "…"},
            )
        raise UnknownGroup(
            f"no group named {name!r}; create it first (manage.py visibility_group create "
            f"{name!r}, or the People page)",
            details={"group": name},
        )
    return group


def create_visibility_group(actor: Actor, name: str) -> Group:
    """A new, empty visibility group; audited as ``group.create``."""
    actor.ensure_admin("creating a visibility group")
    name = clean_group_name(name)
    _refuse_role_group(name)
    if name.lower().startswith(RESERVED_PREFIX):
        raise PeopleRefused(
            f"names starting with {RESERVED_PREFIX!r} are kept for reposearch's own groups",
            code="reserved_group",
        )
    try:
        with transaction.atomic():
            group = Group.objects.create(name=name)
    except IntegrityError:
        raise PeopleRefused(
            f"a group named {name!r} exists already", code="group_exists", details={"group": name}
        ) from None
    actor.record("group.create", name)
    return group


@dataclass(frozen=True)
class MembershipChange:
    group: str
    username: str
    changed: bool


def add_to_group(actor: Actor, group_name: str, user: Any) -> MembershipChange:
    """Put ``user`` in the visibility group; audited as ``group.add_member`` when new."""
    actor.ensure_admin("changing who is in a visibility group")
    group = visibility_group(group_name)
    changed = not user.groups.filter(pk=group.pk).exists()
    if changed:
        user.groups.add(group)
        actor.record("group.add_member", group.name, {"user": user.get_username()})
    return MembershipChange(group.name, user.get_username(), changed)


def remove_from_group(actor: Actor, group_name: str, user: Any) -> MembershipChange:
    """Take ``user`` out of the visibility group; audited as ``group.remove_member``."""
    actor.ensure_admin("changing who is in a visibility group")
    group = visibility_group(group_name)
    changed = user.groups.filter(pk=group.pk).exists()
    if changed:
        user.groups.remove(group)
        actor.record("group.remove_member", group.name, {"user": user.get_username()})
    return MembershipChange(group.name, user.get_username(), changed)
