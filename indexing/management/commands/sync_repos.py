"""``manage.py sync_repos FILE [--dry-run]`` / ``--from-settings``: apply a repository file.

Prints the plan, one line per repository (add / update / remove / unchanged), then applies it
unless ``--dry-run``. An invalid or unreadable file is refused with every problem and its line,
and nothing is changed (exit status 1). ``--from-settings`` applies ``REPO_SEARCH_REPOS_FILE``
the same way, and is refused (exit status 1) when it is unset: there is nothing to apply.
``manage.py prepare`` (``make up``, compose's ``migrate``) runs this step at start and reports a
refusal without stopping the server from starting.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from indexing.repository_sets.loading import RepositoryFileInvalid
from indexing.repository_sets.reconcile import record_refusal, sync_repository_file


class Command(BaseCommand):
    help = (
        "Add, update and (with prune: true) remove repositories as a YAML or JSON file lists them."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", nargs="?", help="the repository file (YAML, or .json)")
        parser.add_argument(
            "--from-settings",
            action="store_true",
            help="apply REPO_SEARCH_REPOS_FILE (refused when it is unset)",
        )
        parser.add_argument("--dry-run", action="store_true", help="print the plan only")

    def handle(self, *args: Any, **options: Any) -> None:
        path = options["file"]
        from_settings = options["from_settings"]
        if from_settings == bool(path):
            raise CommandError("give either FILE or --from-settings")
        if from_settings:
            path = settings.REPO_SEARCH_REPOS_FILE
            if not path:
                raise CommandError(
                    "REPO_SEARCH_REPOS_FILE is not set, so there is no repository file to apply:"
                    " set it to the file's path, or give the file: sync_repos FILE"
                )
        try:
            result = sync_repository_file(path, dry_run=options["dry_run"])
        except RepositoryFileInvalid as refusal:
            if not options["dry_run"]:
                record_refusal(path, refusal)
            message = f"{refusal}\nthe repository file was not applied; nothing was changed"
            raise CommandError(message) from None
        for change in result.plan.changes:
            self.stdout.write(change.describe())
        verb = "applied" if result.applied else "dry run, nothing changed"
        self.stdout.write(f"{path}: {result.plan.summary} ({verb})")
