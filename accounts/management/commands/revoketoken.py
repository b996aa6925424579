"""``manage.py revoketoken USER TOKEN`` (TOKEN: its id or its name) or ``revoketoken USER --all``.

Without TOKEN or ``--all`` it lists USER's unrevoked tokens and revokes nothing. A revoked token
stops working at once and stays listed as revoked. Audited as ``token.revoke``.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.actors import Actor
from accounts.errors import PeopleRefused
from accounts.services.account_tokens import find_token, revoke_token_for, usable_tokens
from accounts.services.roles import find_account


class Command(BaseCommand):
    help = "Revoke an account's API token (by id or name), or all of them with --all."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("token", nargs="?", help="The token's id or name.")
        parser.add_argument("--all", action="store_true", help="Every unrevoked token of USER.")

    def handle(self, *args: Any, **options: Any) -> None:
        actor = Actor.operator("revoketoken")
        try:
            user = find_account(options["username"])
            if options["all"] and options["token"]:
                raise CommandError("name one token or pass --all, not both")
            if options["all"]:
                tokens = list(usable_tokens(user))
            elif options["token"]:
                tokens = [find_token(user, options["token"])]
            else:
                raise CommandError(self._choices(user))
            for token in tokens:
                revoke_token_for(actor, token)
                self.stdout.write(f"revoked {token.name!r} (id {token.pk}) of {user.username}")
            if not tokens:
                self.stdout.write(f"{user.username} has no unrevoked token")
        except PeopleRefused as error:
            raise CommandError(error.message) from None

    @staticmethod
    def _choices(user: Any) -> str:
        rows = [
            f"  {token.pk}  {token.name}  ({token.scope}, {token.prefix}…"
            + (", expired" if token.is_expired else "")
            + ")"
            for token in usable_tokens(user)
        ]
        if not rows:
            return f"{user.username} has no unrevoked token"
        return "name the token to revoke (its id or name), or pass --all:\n" + "\n".join(rows)
