"""Bulk import: every repository a git host lists for an organisation or group, added through
``add_repository`` (the API's path) -- planned first, applied after every page was read.

A listing that fails part-way (a 500, a refused token, a rate limit too long to wait) raises
before anything is added. Archived repositories and forks are skipped unless asked for;
repositories already indexed are reported as duplicates, not errors; a URL the policy refuses
is reported and skipped. The additions are one transaction (their jobs are queued when it
commits), each recorded in the audit log as ``repository.add`` with ``via: import_repos``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from django.conf import settings
from django.db import transaction

from accounts import audit
from indexing.exceptions import DuplicateRepository, RepositoryLimitReached, RepositoryRefused
from indexing.forges.providers import ListedRepository
from indexing.models import Repository
from indexing.services.repositories import add_repository, validate_new_repository
from indexing.source_identity import source_identity

ImportKind = Literal["add", "duplicate", "skipped", "refused"]


@dataclass
class ImportItem:
    kind: ImportKind
    listed: ListedRepository
    url: str
    reason: str = ""
    repository_id: str = ""

    def describe(self) -> str:
        text = f"{self.kind:<9} {self.listed.full_name} {self.url}"
        return text + (f": {self.reason}" if self.reason else "")


def plan_import(
    listed: Sequence[ListedRepository],
    *,
    include_archived: bool = False,
    include_forks: bool = False,
) -> list[ImportItem]:
    """What importing ``listed`` would do, one item each (nothing is written)."""
    items: list[ImportItem] = []
    planned: set[str] = set()
    room = settings.REPO_SEARCH_MAX_REPOS - Repository.objects.count()
    for repository in listed:
        url = repository.clone_url
        skip = (
            "archived (--include-archived to add it)" if repository.archived and not include_archived
            else "a fork (--include-forks to add it)" if repository.fork and not include_forks
            else "empty: nothing to index" if repository.empty
            else ""
        )  # fmt: skip
        if skip:
            items.append(ImportItem("skipped", repository, url, skip))
            continue
        try:
            clean_url, _branch, _name = validate_new_repository(url, None)
        except DuplicateRepository as duplicate:
            items.append(ImportItem("duplicate", repository, url, duplicate.message))
            continue
        except RepositoryLimitReached as limit:
            items.append(ImportItem("refused", repository, url, limit.message))
            continue
        except RepositoryRefused as refusal:
            items.append(ImportItem("refused", repository, url, refusal.message))
            continue
        key = source_identity(clean_url)
        if key in planned:
            items.append(ImportItem("duplicate", repository, clean_url, "listed twice"))
            continue
        if len(planned) >= room:
            items.append(ImportItem("refused", repository, clean_url, "over REPO_SEARCH_MAX_REPOS"))
            continue
        planned.add(key)
        items.append(ImportItem("add", repository, clean_url))
    return items


def apply_import(
    items: Sequence[ImportItem], *, visibility_groups: Sequence[str] = (), source: str = ""
) -> int:
    """Add the planned repositories in one transaction; returns how many were added (one
    added meanwhile by someone else becomes a duplicate)."""
    added = 0
    with transaction.atomic():
        for item in items:
            if item.kind != "add":
                continue
            try:
                job = add_repository(
                    item.url,
                    name=item.listed.full_name[:200],
                    visibility_groups=list(visibility_groups) or None,
                )
            except DuplicateRepository as duplicate:
                item.kind, item.reason = "duplicate", duplicate.message
                continue
            item.repository_id = str(job.repository_id)
            added += 1
            audit.record(
                "repository.add",
                target=item.repository_id,
                details={"via": "import_repos", "source": source, "url": item.url,
                         "name": item.listed.full_name, "job": job.pk},
            )  # fmt: skip
    return added
