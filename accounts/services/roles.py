"""Granting and revoking roles: ``set_role`` (and finding the account by name).

A role is membership of one role group (``accounts.roles``); revoking is going back to ``read``.
Refused: lowering a superuser (they are administrators whatever their groups), lowering one's own
role, and leaving the server without an active administrator. A refused change is recorded too
(``account.role``, outcome ``refused``, with the reason), from every path: the People page,
``manage.py role``, the admin's user form.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.db.models import Q

from accounts.actors import Actor
from accounts.errors import PeopleRefused, UnknownAccount
from accounts.models import AuditOutcome
from accounts.roles import (
    GROUP_OF_ROLE,
    SHOWN_VALUE_LENGTH,
    Role,
    grant_role,
    role_from_group_names,
)

MESSAGE_LENGTH = 500  # of a refusal's message in its audit row


def find_account(username: str) -> Any:
    """The account called ``username``, or ``UnknownAccount`` naming the nearest usernames (for
    the operator's commands, which may see every account)."""
    accounts = get_user_model().objects
    user = accounts.filter(username=username).first()
    if user is None:
        names = list(accounts.order_by("username").values_list("username", flat=True)[:10_000])
        by_lower = {name.lower(): name for name in names}
        near = [by_lower[n] for n in difflib.get_close_matches(username.lower(), by_lower, n=3)]
        hint = f" — did you mean {', '.join(near)}?" if near else ""
        raise UnknownAccount(
            f"no account named {username!r}{hint}",
            details={"username": username, **({"suggestions": near} if near else {})},
        )
    return user


def parse_role(value: str) -> Role:
    try:
        return Role.parse(str(value))
    except ValueError as error:
        raise PeopleRefused(str(error), code="invalid_role") from None


def other_active_administrators(user: Any) -> bool:
    """Whether an active administrator other than ``user`` exists."""
    return (
        get_user_model()
        .objects.filter(is_active=True)
        .filter(Q(is_superuser=True) | Q(groups__name=GROUP_OF_ROLE[Role.ADMIN]))
        .exclude(pk=user.pk)
        .exists()
    )


def held_role(user: Any) -> Role:
    """The role of ``user`` read from the database now, active or not (an inactive account
    keeps its role for when it is active again; ``role_of`` says it has none meanwhile)."""
    names = set(user.groups.values_list("name", flat=True))
    return role_from_group_names(names, is_superuser=user.is_superuser)


@dataclass(frozen=True)
class RoleChange:
    username: str
    before: Role
    after: Role

    @property
    def changed(self) -> bool:
        return self.before != self.after


def check_role_change(actor: Actor, user: Any, wanted: Role) -> RoleChange:
    """What giving ``user`` the role ``wanted`` would change, or the refusal (nothing written)."""
    actor.ensure_admin("changing a role")
    before = held_role(user)
    name = user.get_username()
    if user.is_superuser and wanted < Role.ADMIN:
        raise PeopleRefused(
            f"{name} is a superuser, an administrator whatever their role; a superuser "
            "clears their 'Superuser status' in the admin (/admin/) first to give them a "
            "smaller role",
            code="superuser",
        )
    if wanted < Role.ADMIN and before == Role.ADMIN:
        if actor.user is not None and actor.user.pk == user.pk:
            raise PeopleRefused(
                "you cannot lower your own role; another administrator can", code="own_role"
            )
        check_not_last_administrator(user)
    return RoleChange(name, before, wanted)


def check_not_last_administrator(user: Any) -> None:
    """Refuse (``PeopleRefused``, code ``last_admin``) whatever would leave the server without
    an active administrator, when ``user`` is the only one (their role lowered, the account
    deactivated or deleted)."""
    if user.is_active and not other_active_administrators(user):
        raise PeopleRefused(
            f"{user.get_username()} is the last active administrator; make another account an "
            "administrator first",
            code="last_admin",
        )


def record_refused_role_change(actor: Actor, user: Any, wanted: str, error: PeopleRefused) -> None:
    """The audit row of a role change refused with ``error`` (nothing else is written); the
    role asked for, as posted, is cut short (``details.to``, and quoted in the message)."""
    actor.record(
        "account.role",
        user.get_username(),
        {
            "from": held_role(user).label,
            "to": wanted[:SHOWN_VALUE_LENGTH],
            "error": error.code,
            "message": error.message[:MESSAGE_LENGTH],
        },
        outcome=AuditOutcome.REFUSED,
    )


def set_role(actor: Actor, user: Any, role: Role | str) -> RoleChange:
    """Make ``user`` hold exactly ``role``; audited as ``account.role`` when it changes, and
    when it is refused (the refusal raised again after its row is written)."""
    try:
        wanted = role if isinstance(role, Role) else parse_role(role)
        return _set_role(actor, user, wanted)
    except PeopleRefused as error:
        # Outside _set_role's transaction, which the refusal rolled back.
        record_refused_role_change(
            actor, user, role.label if isinstance(role, Role) else str(role), error
        )
        raise


@transaction.atomic
def _set_role(actor: Actor, user: Any, wanted: Role) -> RoleChange:
    # Serialise role changes so two administrators cannot demote each other at once.
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(hashtext('reposearch:roles'))")
    change = check_role_change(actor, user, wanted)
    if change.changed:
        grant_role(user, wanted)
        actor.record(
            "account.role", change.username, {"from": change.before.label, "to": change.after.label}
        )
    return change
