"""Symbol search and go to definition for a viewer: input checks, scope, the lookup.

``search_symbols`` answers ``GET /api/symbols`` and MCP ``find_symbol`` (filters: repository,
language, kind); ``go_to_definition`` answers ``GET /api/symbols/definitions`` (the repository
and language of the file the name was clicked in are preferences, not filters: a definition in
another repository is still found). Only ready repositories the viewer may see are read; a
repository named that it may not see is ``RepositoryNotFound``, like one that does not exist.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from uuid import UUID

from accounts.visibility import Viewer
from indexing.chunking.model import KIND_CLASS, KIND_FUNCTION, KIND_METHOD, KIND_MODULE
from indexing.chunking.prose import KIND_SECTION
from indexing.models import RepositoryStatus
from indexing.repository_refs import find_repository
from indexing.visible import visible_repositories
from search.exact.candidates import CandidateScope, branch_entries
from search.exact.errors import QueryRejected
from search.exact.query_filters import checked_language, closest
from search.filter_notices import filter_notices
from search.symbols.lookup import (
    MAX_NAME_CHARS,
    DefinitionHit,
    definitions_named,
    find_definitions,
)

MAX_LIMIT = 100
MAX_FILTER_CHARS = 64


@dataclass
class SymbolAnswer:
    query: str
    hits: list[DefinitionHit]
    truncated: bool
    # No hit: a language filter that matches no file (search.filter_notices).
    notices: list[dict[str, str]] = field(default_factory=list)


def checked_name(name: object, field: str = "q") -> str:
    """``name`` stripped, or ``QueryRejected`` saying what a name may be."""
    if not isinstance(name, str) or not name.strip():
        raise QueryRejected("invalid", f"{field} must name a symbol", {"field": field})
    name = name.strip()
    if len(name) > MAX_NAME_CHARS:
        raise QueryRejected(
            "invalid",
            f"{field} is {len(name)} characters; a symbol name has at most {MAX_NAME_CHARS}",
            {"field": field, "max": MAX_NAME_CHARS},
        )
    if "\x00" in name or any(ch.isspace() for ch in name):
        raise QueryRejected(
            "invalid", f"{field} must be one name, without spaces or NUL", {"field": field}
        )
    return name


def _checked_limit(limit: int) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise QueryRejected("invalid", f"limit must be 1..{MAX_LIMIT}", {"field": "limit"})
    return limit


# What ``kind`` may name: the kinds the chunkers give a definition.
DEFINITION_KINDS = (KIND_FUNCTION, KIND_METHOD, KIND_CLASS, KIND_MODULE, KIND_SECTION)


def _checked_filter(value: str | None, field: str) -> str | None:
    if value is None or not value.strip():
        return None
    if len(value) > MAX_FILTER_CHARS or "\x00" in value:
        raise QueryRejected(
            "invalid", f"{field} is not a {field} name", {"field": field, "max": MAX_FILTER_CHARS}
        )
    return value.strip().lower()


def _checked_language(value: str | None) -> str | None:
    """``lang`` as a language id (``py``, ``Python`` -> ``python``); an unknown one is refused
    with the nearest, as the query language's ``lang:`` is."""
    if value is None or _checked_filter(value, "lang") is None:
        return None
    return checked_language(value, "lang")


def _checked_kind(value: str | None) -> str | None:
    """``kind`` as one of the kinds the chunker gives a definition; another is refused."""
    kind = _checked_filter(value, "kind")
    if kind is None or kind in DEFINITION_KINDS:
        return kind
    nearest = closest(kind, DEFINITION_KINDS)
    hint = f" — did you mean {nearest[0]}?" if nearest else ""
    raise QueryRejected(
        "invalid",
        f"unknown kind {value!r}; use one of {', '.join(DEFINITION_KINDS)}{hint}",
        {"field": "kind", "value": value, "choices": list(DEFINITION_KINDS)},
    )


def readable_repository_ids(viewer: Viewer, repo: str | None) -> list[UUID]:
    """Ids of the ready repositories in scope: ``repo`` (an id or name) or all ``viewer`` sees.
    Raises ``RepositoryNotFound`` / ``AmbiguousRepository`` for ``repo``."""
    if repo is not None and repo.strip():
        found = find_repository(repo, viewer)
        ready = found.status == RepositoryStatus.READY and found.active_generation > 0
        return [found.pk] if ready else []
    return list(
        visible_repositories(viewer)
        .filter(status=RepositoryStatus.READY, active_generation__gt=0)
        .values_list("pk", flat=True)
    )


def search_symbols(
    q: object,
    viewer: Viewer,
    *,
    repo: str | None = None,
    lang: str | None = None,
    kind: str | None = None,
    branch: str | None = None,
    limit: int = 20,
) -> SymbolAnswer:
    """Definitions whose name matches ``q``: exact, prefix, substring, then similar names; on
    each repository's default branch, or on ``branch`` (a name, glob or ``*``; each hit then
    names its branch). An unknown branch is ``UnknownBranch``."""
    name = checked_name(q)
    limit = _checked_limit(limit)
    language = _checked_language(lang)
    kind_name = _checked_kind(kind)
    repo_ids = readable_repository_ids(viewer, repo)
    if not repo_ids:
        return SymbolAnswer(name, [], False)
    entries = None
    if branch is not None and branch.strip():
        repo_ids, entries = branch_entries([branch.strip()], repo_ids, viewer, default_plan=False)
    scope = CandidateScope(
        repo_ids=repo_ids, languages=[language] if language else None, branches=entries
    )
    hits, more = find_definitions(
        name, scope, limit=limit, kinds=[kind_name] if kind_name else None
    )
    notices = filter_notices(scope, [], [language], empty=True) if language and not hits else []
    return SymbolAnswer(name, hits, more, notices)


def go_to_definition(
    name: object,
    viewer: Viewer,
    *,
    repo: str | None = None,
    lang: str | None = None,
    limit: int = 20,
) -> SymbolAnswer:
    """Definitions named exactly ``name`` in every repository ``viewer`` may see, those of
    ``repo`` and in ``lang`` first. An unknown ``repo`` is ``RepositoryNotFound``."""
    symbol = checked_name(name, "name")
    limit = _checked_limit(limit)
    language = _checked_language(lang) or ""
    prefer = find_repository(repo, viewer).pk if repo and repo.strip() else None
    repo_ids = readable_repository_ids(viewer, None)
    if not repo_ids:
        return SymbolAnswer(symbol, [], False)
    hits, more = definitions_named(
        symbol,
        CandidateScope(repo_ids=repo_ids),
        prefer_repo=prefer,
        prefer_language=language,
        limit=limit,
    )
    return SymbolAnswer(symbol, hits, more)
