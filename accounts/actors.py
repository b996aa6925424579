"""Who makes a change: an account (on a page, through the API) or an operator at the server's
shell (``manage.py``), and the audit row that says so.

Services take an ``Actor``, check it may act (``ensure_admin``) and ``record`` what they did.
An operator has no account: their rows have no actor name and say which command ran and as
which system user (``details.via``, ``details.os_user``), so a command's change is never
attributed to the account it changed.
"""

from __future__ import annotations

import getpass
from dataclasses import dataclass, field
from typing import Any

from accounts.audit import client_address, record
from accounts.errors import NotAnAdministrator
from accounts.models import ApiToken, AuditOutcome
from accounts.roles import Role, role_of
from accounts.tokens import effective_role


def _os_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a container's bare uid)
        return ""


@dataclass(frozen=True)
class Actor:
    user: Any = None
    token: ApiToken | None = None
    address: str | None = None
    via: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def operator(cls, command: str) -> Actor:
        """Someone running ``manage.py command`` on the server: trusted like an administrator."""
        return cls(via=f"manage.py {command}", extra={"os_user": _os_user()})

    @classmethod
    def of_request(cls, request: Any, via: str) -> Actor:
        """The signed-in account of a page request."""
        auth = getattr(request, "auth", None)
        return cls(
            user=request.user,
            token=auth if isinstance(auth, ApiToken) else None,
            address=client_address(request),
            via=via,
        )

    @property
    def is_operator(self) -> bool:
        return self.user is None

    @property
    def name(self) -> str:
        return self.user.get_username() if self.user is not None else self.via

    @property
    def role(self) -> Role | None:
        """What the actor may do: an operator is an administrator; an API token acts with its
        scope capped by its user's role."""
        if self.is_operator:
            return Role.ADMIN
        if self.token is not None:
            return effective_role(self.token)
        return role_of(self.user)

    def ensure_admin(self, what: str) -> None:
        """Refuse (``NotAnAdministrator``) unless an operator or an administrator acts."""
        role = self.role
        if role is None or role < Role.ADMIN:
            raise NotAnAdministrator(
                f"{what} is for administrators; you are {role.label if role else 'not signed in'}"
            )

    def record(
        self,
        action: str,
        target: str,
        details: dict[str, Any] | None = None,
        outcome: str = AuditOutcome.OK,
    ) -> None:
        record(
            action,
            user=self.user,
            token=self.token,
            address=self.address,
            target=target,
            outcome=outcome,
            details={**(details or {}), "via": self.via, **self.extra},
        )
