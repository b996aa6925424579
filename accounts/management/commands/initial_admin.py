"""``manage.py initial_admin``: on an empty database, create ``admin`` and write its password
and API token to ``<REPO_SEARCH_DATA_DIR>/initial-admin.txt`` (see accounts.first_run)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand

from accounts.first_run import ensure_initial_admin, initial_admin_path, people_lines


class Command(BaseCommand):
    help = "Create the first administrator on an empty database (its secrets go to a file)."

    def handle(self, *args: Any, **options: Any) -> None:
        path = ensure_initial_admin(settings.REPO_SEARCH_DATA_DIR)
        if path is not None:
            self.stdout.write(
                f"created the administrator 'admin'; its password and API token are in {path}"
                " (readable only by this user)"
            )
            for line in people_lines():
                self.stdout.write(line)
        elif initial_admin_path(settings.REPO_SEARCH_DATA_DIR).exists():
            self.stdout.write(
                "accounts exist; the first administrator's secrets are in "
                f"{initial_admin_path(settings.REPO_SEARCH_DATA_DIR)}"
            )
