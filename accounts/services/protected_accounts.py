"""Whose account another account may change in the admin: the records roles do not settle.

Administrators use every admin page by their role (``accounts.admin_access``), but an account is
more than a role: whoever sets its password or makes it a token acts as it, and from then on the
audit log names it for what they do (``accounts.services.account_tokens`` asks the same). So only a superuser changes a superuser's record (otherwise an administrator
would set a superuser's password and sign in as one) or another administrator's (one
administrator would become another). An administrator changes their own record, and another
administrator's role on the People page or with ``manage.py role`` (audited, never the last
one); after that the account is an ordinary one. Operators (``manage.py``) are not limited here.
Nobody deactivates or deletes their own account, nor the last active administrator's (as nobody
lowers their role, ``accounts.services.roles``).

Refusals are ``PeopleRefused`` with a code; ``record_refused_account_change`` writes their audit
row, as refused role changes have theirs.
"""

from __future__ import annotations

from typing import Any

from django.urls import reverse

from accounts.actors import Actor
from accounts.errors import PeopleRefused
from accounts.models import AuditOutcome
from accounts.roles import Role
from accounts.services.roles import MESSAGE_LENGTH, check_not_last_administrator, held_role


def acts_as_superuser(actor: Actor) -> bool:
    return actor.is_operator or bool(getattr(actor.user, "is_superuser", False))


def check_may_change(actor: Actor, user: Any) -> None:
    """Refuse (``PeopleRefused``) ``actor`` changing ``user``'s record at all (any field, its
    password, deleting it) when it belongs to a superuser or another administrator and the actor
    is not a superuser. Viewing it is not refused."""
    if acts_as_superuser(actor):
        return
    name = user.get_username()
    if user.is_superuser:
        raise PeopleRefused(
            f"{name} is a superuser: only a superuser changes a superuser's account, sets its "
            "password, makes its tokens, deactivates or deletes it; you may view it",
            code="superuser",
        )
    if actor.user is not None and actor.user.pk != user.pk and held_role(user) == Role.ADMIN:
        raise PeopleRefused(
            f"{name} is an administrator: only a superuser changes another administrator's "
            "account, sets its password, makes its tokens, deactivates or deletes it, so that no "
            f"administrator can act as another. To take {name}'s role away, use the People page "
            f"({reverse('frontend:people')}) or 'manage.py role revoke {name}'",
            code="administrator",
        )


def check_removal(actor: Actor, user: Any, removal: str) -> None:
    """Refuse (``PeopleRefused``) ``actor`` deactivating or deleting (``removal``: deactivate,
    delete) ``user``: their own account, one they may not change (``check_may_change``), the
    last active administrator."""
    check_may_change(actor, user)
    if actor.user is not None and actor.user.pk == user.pk:
        other = "another" if acts_as_superuser(actor) else "a"
        raise PeopleRefused(
            f"you cannot {removal} your own account; {other} superuser can", code="own_account"
        )
    if held_role(user) == Role.ADMIN:
        check_not_last_administrator(user)


def record_refused_account_change(actor: Actor, user: Any, verb: str, error: PeopleRefused) -> None:
    """The audit row of an admin change to ``user`` (``verb``: change, password, delete) refused
    with ``error``: ``admin.auth.user.<verb>``, outcome refused, the reason's code and message."""
    actor.record(
        f"admin.auth.user.{verb}",
        user.get_username(),
        {"id": str(user.pk), "error": error.code, "message": error.message[:MESSAGE_LENGTH]},
        outcome=AuditOutcome.REFUSED,
    )
