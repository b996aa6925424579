"""Which repositories a parsed query's ``repo:`` / ``-repo:`` filters and requested ids leave,
for every search mode (``search.exact.dispatch``); invisible and missing look the same."""

from __future__ import annotations

import fnmatch
from typing import Any
from uuid import UUID

from accounts.visibility import Viewer, visible_repositories
from indexing.models import RepositoryStatus
from search.exact.errors import QueryRejected
from search.exact.query_language import SearchQuery
from search.retrieval.scope import UnknownRepositories


def ready_repositories(viewer: Viewer, *fields: str) -> list[tuple[Any, ...]]:
    """(id, name, branch) of the searchable repositories ``viewer`` may see, by name (or (id,
    *``fields``))."""
    return list(
        visible_repositories(viewer)
        .filter(status=RepositoryStatus.READY, active_generation__gt=0)
        .order_by("name")
        .values_list("pk", *(fields or ("name", "branch")))
    )


def check_visible(repo_ids: list[UUID] | None, viewer: Viewer) -> None:
    """Raise ``UnknownRepositories`` for requested ids that do not exist or ``viewer`` may not
    see -- the same error for both (as the hybrid executor's ``scope_repositories``)."""
    if not repo_ids:
        return
    known = set(visible_repositories(viewer).filter(pk__in=repo_ids).values_list("pk", flat=True))
    unknown = [rid for rid in dict.fromkeys(repo_ids) if rid not in known]
    if unknown:
        raise UnknownRepositories(unknown)


def _matching(pattern: str, repositories: list[tuple[UUID, str, str]]) -> set[UUID]:
    lowered = pattern.lower()
    return {
        pk
        for pk, name, _ in repositories
        if fnmatch.fnmatchcase(name.lower(), lowered) or str(pk) == lowered
    }


def resolve_repositories(
    parsed: SearchQuery, base_ids: list[UUID] | None, viewer: Viewer
) -> list[UUID] | None:
    """Repository ids the query's ``repo:``/``-repo:`` filters leave (None: all that ``viewer``
    may see). A ``repo:`` that matches no ready repository ``viewer`` may see is a 404 naming
    it. (``branch:`` picks branches: ``branch_entries``, or the hybrid executor's scope.)"""
    if not (parsed.repos or parsed.exclude_repos):
        return base_ids
    repositories = ready_repositories(viewer)
    if base_ids is not None:
        allowed = set(base_ids)
        repositories = [r for r in repositories if r[0] in allowed]
    chosen = {pk for pk, _, _ in repositories}
    if parsed.repos:
        wanted: set[UUID] = set()
        for pattern in parsed.repos:
            found = _matching(pattern, repositories)
            if not found:
                raise QueryRejected(
                    "unknown_repository",
                    f"no indexed repository matches repo:{pattern}",
                    {"repo": pattern},
                )
            wanted |= found
        chosen &= wanted
    for pattern in parsed.exclude_repos:
        chosen -= _matching(pattern, repositories)
    # Keep the order stable and never widen to "all" when the filters leave nothing.
    return [pk for pk, _, _ in repositories if pk in chosen] or [UUID(int=0)]
