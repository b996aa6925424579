"""Why a change to people, roles, visibility groups or tokens is refused, in the domain's words.

Services raise these; the People page shows ``message``, the commands turn it into a
``CommandError``. ``status`` and ``code`` sit on the class (an API that maps them needs no import
of the services), ``details`` holds names a caller may use.
"""

from __future__ import annotations

from typing import Any


class PeopleRefused(Exception):
    """A change to accounts that cannot be made as asked; ``message`` says what to do instead."""

    status = 400
    code = "invalid"

    def __init__(
        self, message: str, *, code: str | None = None, details: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.details = details or {}


class NotAnAdministrator(PeopleRefused):
    """The acting account is not an administrator."""

    status = 403
    code = "permission_denied"


class UnknownAccount(PeopleRefused):
    status = 404
    code = "unknown_user"


class UnknownGroup(PeopleRefused):
    status = 404
    code = "unknown_group"


class UnknownToken(PeopleRefused):
    status = 404
    code = "unknown_token"
