"""``manage.py role grant USER read|write|admin`` and ``manage.py role revoke USER`` (back to read).

``read`` searches and asks (every active account), ``write`` also manages repositories, ``admin``
also manages models, people and tokens. Audited as ``account.role``.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.actors import Actor
from accounts.errors import PeopleRefused
from accounts.roles import ROLE_NAMES, Role
from accounts.services.roles import find_account, set_role


class Command(BaseCommand):
    help = "Give an account a role (grant USER read|write|admin) or take it away (revoke USER)."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True, metavar="grant|revoke")
        grant = actions.add_parser("grant", help="USER ROLE: make USER hold exactly ROLE.")
        grant.add_argument("username")
        grant.add_argument("role", choices=ROLE_NAMES)
        revoke = actions.add_parser("revoke", help="USER: back to read (searches and asks only).")
        revoke.add_argument("username")

    def handle(self, *args: Any, **options: Any) -> None:
        role = Role.READ if options["action"] == "revoke" else Role.parse(options["role"])
        try:
            user = find_account(options["username"])
            change = set_role(Actor.operator(f"role {options['action']}"), user, role)
        except PeopleRefused as error:
            raise CommandError(error.message) from None
        if change.changed:
            self.stdout.write(f"{change.username}: {change.before.label} -> {change.after.label}")
        else:
            self.stdout.write(f"{change.username} is {change.after.label} already")
