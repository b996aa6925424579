"""``manage.py createtoken USER NAME [--scope read|write|admin] [--expires-in-days N]``.

Prints the secret (shown only this once). The scope is ``read`` unless ``--scope`` says
otherwise, whatever USER's role, and may not exceed that role. Audited as
``token.create`` with USER as the owner and this command as the actor.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.actors import Actor
from accounts.errors import PeopleRefused
from accounts.roles import ROLE_NAMES
from accounts.services.account_tokens import create_token_for
from accounts.services.roles import find_account


class Command(BaseCommand):
    help = (
        "Create an API token for an account and print its secret (shown only this once). The"
        " token can only read unless given --scope write or admin, whatever the account's role."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("name", help="What the token is for, e.g. 'ci' or 'claude-code'.")
        parser.add_argument(
            "--scope",
            choices=ROLE_NAMES,
            default="read",
            help="What the token may do (default: read); at most the account's role.",
        )
        parser.add_argument("--expires-in-days", type=int, default=None)

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            user = find_account(options["username"])
            made = create_token_for(
                Actor.operator("createtoken"),
                user,
                options["name"],
                options["scope"],
                options["expires_in_days"],
            )
        except PeopleRefused as error:
            raise CommandError(error.message) from None
        self.stdout.write(made.secret)
