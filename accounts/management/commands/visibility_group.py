"""``manage.py visibility_group list | create GROUP | add GROUP USER... | remove GROUP USER...``.

A repository restricted to groups is visible only to their members (and administrators); set a
repository's groups as an administrator in the admin or with ``PATCH /api/repos/{id}``
(``visibility_groups``). Every change is audited (``group.create``, ``group.add_member``,
``group.remove_member``).
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.actors import Actor
from accounts.errors import PeopleRefused
from accounts.selectors import visibility_groups
from accounts.services.roles import find_account
from accounts.services.visibility_groups import (
    add_to_group,
    create_visibility_group,
    remove_from_group,
)


class Command(BaseCommand):
    help = "List visibility groups, create one, add accounts to one or remove them from it."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(
            dest="action", required=True, metavar="list|create|add|remove"
        )
        actions.add_parser("list", help="Every visibility group: members, repositories.")
        create = actions.add_parser("create", help="GROUP: a new, empty visibility group.")
        create.add_argument("group")
        for name, what in (("add", "into"), ("remove", "out of")):
            change = actions.add_parser(name, help=f"GROUP USER...: put accounts {what} GROUP.")
            change.add_argument("group")
            change.add_argument("usernames", nargs="+", metavar="user")

    def handle(self, *args: Any, **options: Any) -> None:
        action = options["action"]
        actor = Actor.operator(f"visibility_group {action}")
        try:
            if action == "list":
                self._list()
            elif action == "create":
                group = create_visibility_group(actor, options["group"])
                self.stdout.write(f"created the visibility group {group.name!r}")
            else:
                change_membership = add_to_group if action == "add" else remove_from_group
                users = [find_account(name) for name in options["usernames"]]
                for user in users:
                    change = change_membership(actor, options["group"], user)
                    verb = (
                        ("added to" if action == "add" else "removed from")
                        if change.changed
                        else ("already in" if action == "add" else "not in")
                    )
                    self.stdout.write(f"{change.username} {verb} {change.group}")
        except PeopleRefused as error:
            raise CommandError(error.message) from None

    def _list(self) -> None:
        groups = visibility_groups()
        if not groups:
            self.stdout.write(
                "no visibility groups (manage.py visibility_group create NAME makes one)"
            )
            return
        for group in groups:
            members = ", ".join(group.members) or "no members"
            self.stdout.write(
                f"{group.name}: {len(group.members)} member(s), restricts "
                f"{group.repositories} repositor{'y' if group.repositories == 1 else 'ies'}"
                f" - {members}"
            )
