"""``--user NAME`` for the operator commands (``search``, ``ask``, ``bench/eval/run.py``): whose
eyes to use.

Operator commands run on the server and see every repository by default
(``Viewer.everything()``); ``--user NAME`` shows what that account would see instead, restricted
repositories included only when the account may see them.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError, CommandParser

from accounts.visibility import Viewer, viewer_for

USER_HELP = (
    "see the repositories as this account does (default: every repository, as an operator;"
    " restricted ones too)"
)


def add_user_option(parser: CommandParser) -> None:
    parser.add_argument("--user", metavar="NAME", help=USER_HELP)


def viewer_from_options(options: dict[str, Any]) -> Viewer:
    """The viewer ``--user`` names (an unknown or inactive account is an error), else all."""
    from django.contrib.auth import get_user_model

    name = options.get("user")
    if not name:
        return Viewer.everything()
    user = get_user_model().objects.filter(username=name).first()
    if user is None or not user.is_active:
        raise CommandError(f"--user: no active account named {name!r}")
    return viewer_for(user)
