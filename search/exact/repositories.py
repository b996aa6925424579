"""Which repositories a parsed query's ``repo:`` / ``-repo:`` filters and requested ids leave,
for every search mode (``search.router``); invisible and missing look the same, and the
names an error suggests are only ever those the viewer may see (``accounts.visibility``)."""

from __future__ import annotations

import fnmatch
import re
from typing import Any
from uuid import UUID

from accounts.visibility import Viewer
from indexing.models import RepositoryStatus
from indexing.repository_refs import nearest_names
from indexing.visible import visible_repositories
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


def _prefixed(pattern: str, repositories: list[tuple[UUID, str, str]]) -> list[tuple[UUID, str]]:
    """The repositories whose name, or its last part (``acme/httpclient``: ``httpclient``),
    starts with ``pattern`` (``repo:requests`` for ``requests-2.32.3``)."""
    lowered = pattern.lower()
    return [
        (pk, name)
        for pk, name, _ in repositories
        if name.lower().startswith(lowered) or name.lower().rsplit("/", 1)[-1].startswith(lowered)
    ]


def _resolve(
    pattern: str,
    negated: bool,
    repositories: list[tuple[UUID, str, str]],
    viewer: Viewer,
    text: str = "",
) -> set[UUID]:
    """The repositories ``repo:pattern`` names: by name, glob or id, else by a unique prefix.
    Several by prefix is a 400 naming them; none a 404 naming the closest ``viewer`` may see."""
    found = _matching(pattern, repositories)
    if found:
        return found
    written = f"{'-' if negated else ''}repo:{pattern}"
    prefixed = _prefixed(pattern, repositories) if not any(c in pattern for c in "*?[") else []
    if len(prefixed) == 1:
        return {prefixed[0][0]}
    if prefixed:
        names = [name for _, name in prefixed]
        shown = ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
        raise QueryRejected(
            "ambiguous_repository",
            f"{written} starts the names of several repositories ({shown}): write one of"
            f" them, or a glob for all ({written}*)",
            {"repo": pattern, "suggestions": names[:10], "suggestion": names[0]},
        )
    # The nearest names among every ready repository the viewer may see (the query's other
    # repositories filters aside): never one it may not.
    names = [name for _, name, _ in ready_repositories(viewer)]
    nearest = nearest_names(pattern, names)
    if nearest:
        hint = f" — did you mean {', '.join(f'repo:{n}' for n in nearest)}?"
    elif names:
        more = f" and {len(names) - 5} more" if len(names) > 5 else ""
        hint = f"; the repositories you may search: {', '.join(names[:5])}{more}"
    else:
        hint = "; none you may search is indexed yet"
    raise QueryRejected(
        "unknown_repository",
        f"no indexed repository matches {written}{hint}",
        {
            "repo": pattern,
            "suggestions": nearest,
            **({"suggestion": nearest[0]} if nearest else {}),
            **(
                suggested_query(text, written, f"{written[: -len(pattern)]}{nearest[0]}")
                if nearest
                else {}
            ),
        },
    )


def suggested_query(text: str, written: str, replacement: str) -> dict[str, str]:
    """``{"suggested_query"}``: ``text`` with the filter as written replaced, when it is there
    as a word of its own."""
    for match in re.finditer(rf"(?<!\S){re.escape(written)}(?!\S)", text):
        return {"suggested_query": text[: match.start()] + replacement + text[match.end() :]}
    return {}


def resolve_repositories(
    parsed: SearchQuery, base_ids: list[UUID] | None, viewer: Viewer
) -> list[UUID] | None:
    """Repository ids the query's ``repo:``/``-repo:`` filters leave (None: all that ``viewer``
    may see). Each names repositories by name, glob or id, or by a unique prefix of a name; one
    that names none ``viewer`` may see is a 404 with the closest names it may see, one whose
    prefix starts several a 400 listing them. (``branch:`` picks branches: ``branch_entries``,
    or the hybrid executor's scope.)"""
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
            wanted |= _resolve(pattern, False, repositories, viewer, parsed.text)
        chosen &= wanted
    for pattern in parsed.exclude_repos:
        chosen -= _resolve(pattern, True, repositories, viewer, parsed.text)
    # Keep the order stable and never widen to "all" when the filters leave nothing.
    return [pk for pk, _, _ in repositories if pk in chosen] or [UUID(int=0)]
