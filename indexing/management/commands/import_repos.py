"""``manage.py import_repos github OWNER | gitlab OWNER | gitea OWNER``: add every repository a
git host lists for an organisation (GitLab: a group, with its subgroups) or a user
(``indexing.services.bulk_import``).

The owner is looked up as an organisation (group) first and, when the host answers 404, as a
user; ``--account org`` or ``--account user`` asks only that one. Options: ``--base-url`` (GitHub Enterprise ``https://host/api/v3``, a GitLab or Gitea server;
defaults: api.github.com, gitlab.com, gitea.com), ``--dry-run``, ``--visibility-groups a,b``,
``--include-archived``, ``--include-forks``. The token comes from ``REPO_SEARCH_GITHUB_TOKEN``,
``REPO_SEARCH_GITLAB_TOKEN`` or ``REPO_SEARCH_GITEA_TOKEN`` and is sent only to the base URL.
Prints one line per repository (add / duplicate / skipped / refused) and a summary; a listing
that fails adds nothing (exit status 1).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from indexing.exceptions import RepositoryRefused
from indexing.forges.client import ForgeError
from indexing.forges.providers import FORGES, forge_client, list_repositories
from indexing.services.bulk_import import apply_import, plan_import
from indexing.services.visibility import groups_named


class Command(BaseCommand):
    help = "Add every repository of a GitHub, GitLab or Gitea organisation (GitLab: group) or user."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("host", choices=sorted(FORGES), help="the kind of git host")
        parser.add_argument(
            "owner", help="organisation (GitHub, Gitea), group id/path (GitLab) or user name"
        )
        parser.add_argument(
            "--account",
            choices=["org", "user"],
            default=None,
            help="what the owner is (default: an organisation or group, else a user)",
        )
        parser.add_argument("--base-url", default=None, help="the API's base URL")
        parser.add_argument("--dry-run", action="store_true", help="print the plan only")
        parser.add_argument(
            "--visibility-groups",
            default="",
            help="comma-separated groups that may see the added repositories (default: everyone)",
        )
        parser.add_argument("--include-archived", action="store_true")
        parser.add_argument("--include-forks", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        forge = FORGES[options["host"]]
        owner = options["owner"].strip()
        if not owner:
            raise CommandError("name the organisation, group or user")
        groups = [name.strip() for name in options["visibility_groups"].split(",") if name.strip()]
        try:
            groups_named(groups)  # before any request: an unknown group fails at once
        except RepositoryRefused as refusal:
            raise CommandError(refusal.message) from None
        token = getattr(settings, forge.env_name, None)
        try:
            with forge_client(
                forge, options["base_url"], token, on_wait=lambda m: self.stderr.write(m)
            ) as client:
                listing = list_repositories(client, forge, owner, options["account"])
                pages, base_url = client.pages, client.base_url
        except ForgeError as error:
            raise CommandError(f"{error}\nnothing was added") from None
        listed = listing.repositories
        items = plan_import(
            listed,
            include_archived=options["include_archived"],
            include_forks=options["include_forks"],
        )
        added = 0
        if not options["dry_run"]:
            added = apply_import(items, visibility_groups=groups, source=f"{forge.name}:{owner}")
        for item in items:
            self.stdout.write(item.describe())
        counts = {
            kind: sum(1 for item in items if item.kind == kind)
            for kind in ("add", "duplicate", "skipped", "refused")
        }
        summary = ", ".join(f"{count} {kind}" for kind, count in counts.items())
        verb = "dry run, nothing added" if options["dry_run"] else f"{added} added"
        self.stdout.write(
            f"{forge.name} {listing.account.kind} {owner} at {base_url}: "
            f"{len(listed)} listed over {pages} pages: "
            f"{summary} ({verb})"
        )
