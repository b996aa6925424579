"""What applying a repository file would change: one ``Change`` per repository, checked first.

Every entry is checked as ``POST /api/repos`` would check it (``indexing.services``: the URL
policy, git's branch-name rules, existing group names), plus what only a file can get wrong
(the same repository listed twice). Any problem refuses the whole file with its line.

An entry is matched with an existing repository the way duplicates are found when adding one
(normalised URL and branch; without a branch, any copy of the URL). A field an entry leaves out
is left as it is on the repository (``visibility_groups: []`` opens a repository to everyone;
leaving the field out keeps its groups). Only repositories the file added
(``Repository.managed_by_file``) are ever removed, and only with ``prune: true``.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, Literal

from django.conf import settings

from indexing.exceptions import RepositoryCheckUnavailable, RepositoryRefused
from indexing.models import Repository
from indexing.repository_sets.loading import (
    Entry,
    Problem,
    RepositoryFile,
    RepositoryFileInvalid,
)
from indexing.services.branches import clean_branch_specs
from indexing.services.repositories import checked_url, clean_branch, find_duplicate
from indexing.services.visibility import groups_named, visibility_group_names
from indexing.source_identity import source_identity

ChangeKind = Literal["add", "update", "remove", "unchanged"]
UPDATABLE = ("name", "contextual_summaries", "poll_interval_secs", "visibility_groups", "branches")


@dataclass
class Change:
    kind: ChangeKind
    url: str
    branch: str
    name: str
    line: int | None = None
    repository_id: uuid.UUID | None = None
    settings: dict[str, Any] = field(default_factory=dict)  # add: what the entry gives
    changes: dict[str, tuple[Any, Any]] = field(default_factory=dict)  # update: old, new
    note: str = ""

    def describe(self) -> str:
        """One line of the printed plan."""
        where = f" (line {self.line})" if self.line else ""
        branch = f" branch {self.branch}" if self.branch else ""
        text = f"{self.kind:<9} {self.name} {self.url}{branch}{where}"
        if self.changes:
            text += ": " + "; ".join(
                f"{key} {old!r} -> {new!r}" for key, (old, new) in self.changes.items()
            )
        return text + (f" [{self.note}]" if self.note else "")


@dataclass
class Plan:
    file: RepositoryFile
    changes: list[Change]

    def count(self, kind: ChangeKind) -> int:
        return sum(1 for change in self.changes if change.kind == kind)

    @property
    def summary(self) -> str:
        return ", ".join(
            f"{self.count(kind)} {kind}" for kind in ("add", "update", "remove", "unchanged")
        )


@dataclass
class _Checked:
    entry: Entry
    url: str
    branch: str
    display_name: str


def plan_repository_file(repository_file: RepositoryFile) -> Plan:
    """Check every entry and compare it with the database; raises ``RepositoryFileInvalid``
    naming every problem (``transient`` when one was a lookup failing just now)."""
    problems: list[Problem] = list(repository_file.problems)
    transient = False
    checked: list[_Checked] = []
    for entry in repository_file.entries:
        try:
            clean_url, display_name = checked_url(entry.get("url"))
        except RepositoryRefused as refusal:
            transient |= isinstance(refusal, RepositoryCheckUnavailable)
            problems.append(
                Problem(entry.line_of("url"), f"url {entry.get('url')!r}: {refusal.message}")
            )
            continue
        try:
            branch = clean_branch(entry.get("branch"))
        except RepositoryRefused as refusal:
            problems.append(Problem(entry.line_of("branch"), refusal.message))
            continue
        problems += _field_problems(entry)
        checked.append(_Checked(entry, clean_url, branch, display_name))
    problems += _duplicate_problems(checked)
    if problems:
        raise RepositoryFileInvalid(repository_file.path, problems, transient=transient)

    changes: list[Change] = []
    matched: set[uuid.UUID] = set()
    for item in checked:
        existing = find_duplicate(item.url, item.branch)
        if existing is not None and existing.pk in matched:
            existing = None  # taken by an earlier entry: this one is another copy
        if existing is None:
            changes.append(_addition(item))
        else:
            matched.add(existing.pk)
            changes.append(_comparison(item, existing))
    for repository in Repository.objects.filter(managed_by_file=True).exclude(pk__in=matched):
        kept = not repository_file.prune
        changes.append(
            Change(
                kind="unchanged" if kept else "remove",
                url=repository.url,
                branch=repository.branch,
                name=repository.name,
                repository_id=repository.pk,
                note="no longer in the file; kept because prune is false" if kept else "",
            )
        )
    plan = Plan(repository_file, changes)
    limit = settings.REPO_SEARCH_MAX_REPOS
    # Removals run after the commit that makes the additions, so they do not make room for them.
    total = Repository.objects.count() + plan.count("add")
    if plan.count("add") and total > limit:
        raise RepositoryFileInvalid(
            repository_file.path,
            [
                Problem(
                    0,
                    f"{total} repositories would pass the limit of {limit} (REPO_SEARCH_MAX_REPOS)",
                )
            ],
        )
    return plan


def _field_problems(entry: Entry) -> list[Problem]:
    problems: list[Problem] = []
    name = entry.get("name")
    if name is not None and len(name.strip()) > 200:
        problems.append(Problem(entry.line_of("name"), "name is longer than 200 characters"))
    branches = entry.get("branches")
    if branches is not None:
        try:
            clean_branch_specs(branches)
        except RepositoryRefused as refusal:
            problems.append(Problem(entry.line_of("branches"), refusal.message))
    groups = entry.get("visibility_groups")
    if groups:
        try:
            groups_named(groups)
        except RepositoryRefused as refusal:
            problems.append(Problem(entry.line_of("visibility_groups"), refusal.message))
    return problems


def _duplicate_problems(checked: list[_Checked]) -> list[Problem]:
    """The same repository twice: the same URL and branch, or a URL listed both without a
    branch (its default) and with one, which may be the same branch."""
    problems: list[Problem] = []
    seen: dict[str, list[_Checked]] = {}
    for item in checked:
        base = source_identity(item.url)
        for earlier in seen.get(base, []):
            if earlier.branch == item.branch or not (earlier.branch and item.branch):
                problems.append(
                    Problem(
                        item.entry.line,
                        f"{item.url} is listed twice (also line {earlier.entry.line}); "
                        "name a different branch on each entry of one URL",
                    )
                )
                break
        seen.setdefault(base, []).append(item)
    return problems


def _addition(item: _Checked) -> Change:
    entry = item.entry
    given = {key: entry.get(key) for key in UPDATABLE if key in entry.fields}
    return Change(
        kind="add",
        url=item.url,
        branch=item.branch,
        name=(entry.get("name") or "").strip() or item.display_name,
        line=entry.line,
        settings=given,
    )


def _comparison(item: _Checked, repository: Repository) -> Change:
    entry = item.entry
    current: dict[str, Any] = {
        "name": repository.name,
        "contextual_summaries": repository.contextual_summaries,
        "poll_interval_secs": repository.poll_interval_secs,
        "visibility_groups": visibility_group_names(repository),
        "branches": repository.branch_specs,
    }
    wanted: dict[str, Any] = {}
    for key in UPDATABLE:
        if key in entry.fields:
            value = entry.get(key)
            if key == "name":
                value = value.strip()
            elif key == "visibility_groups":
                value = sorted({name.strip() for name in value})
            elif key == "branches":
                value = clean_branch_specs(value)
            wanted[key] = value
    changes = {key: (current[key], value) for key, value in wanted.items() if current[key] != value}
    return Change(
        kind="update" if changes else "unchanged",
        url=repository.url,
        branch=repository.branch,
        name=repository.name,
        line=entry.line,
        repository_id=repository.pk,
        changes=changes,
        note="" if repository.managed_by_file else "added by hand: prune leaves it",
    )
