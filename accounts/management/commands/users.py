"""``manage.py users``: every account with its role, visibility groups, active flag and tokens."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from accounts.selectors import people


class Command(BaseCommand):
    help = (
        "List the accounts: role (read, write, admin), visibility groups, whether active, and "
        "how many usable API tokens. Change them with 'manage.py role', "
        "'manage.py visibility_group', 'manage.py createtoken' / 'revoketoken'."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        rows = [
            (
                person.username,
                person.role.label + (" (superuser)" if person.is_superuser else ""),
                "yes" if person.is_active else "no",
                str(person.tokens),
                ", ".join(person.groups) or "-",
            )
            for person in people()
        ]
        if not rows:
            self.stdout.write("no accounts yet (manage.py initial_admin makes the first)")
            return
        header = ("USER", "ROLE", "ACTIVE", "TOKENS", "GROUPS")
        widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header) - 1)]
        for row in [header, *rows]:
            cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
            self.stdout.write("  ".join([*cells, row[-1]]).rstrip())
