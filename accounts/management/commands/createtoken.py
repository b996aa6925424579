"""``manage.py createtoken USER NAME [--scope read|write|admin] [--expires-in-days N]``."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.audit import record
from accounts.roles import ROLE_NAMES
from accounts.tokens import TokenRefused, create_token


class Command(BaseCommand):
    help = "Create an API token for an account and print its secret (shown only this once)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("name", help="What the token is for, e.g. 'ci' or 'claude-code'.")
        parser.add_argument("--scope", choices=ROLE_NAMES, default="read")
        parser.add_argument("--expires-in-days", type=int, default=None)

    def handle(self, *args: Any, **options: Any) -> None:
        user = get_user_model().objects.filter(username=options["username"]).first()
        if user is None:
            raise CommandError(f"no account named {options['username']!r}")
        try:
            made = create_token(user, options["name"], options["scope"], options["expires_in_days"])
        except TokenRefused as error:
            raise CommandError(str(error)) from None
        record(
            "token.create",
            user=user,
            target=str(made.token.pk),
            details={"name": made.token.name, "scope": made.token.scope, "via": "createtoken"},
        )
        self.stdout.write(made.secret)
