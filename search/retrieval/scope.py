"""Scope: which chunks a search may return.

Tests and documentation are left out by default and come back by themselves when the query is
about them (``pytest fixture for the client``, ``readme install steps``); explicit
``include_tests`` / ``include_docs`` win. Filters for repositories, languages and path globs
are pushed down into every retrieval query as one SQL fragment (``ScopeFilter.sql``), always
together with the live generation of ready repositories.

Path globs become anchored PostgreSQL regexes in ``search.retrieval.query``.
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from fnmatch import fnmatchcase
from http import HTTPStatus
from typing import Any
from uuid import UUID

from django.core.exceptions import EmptyResultSet
from django.db import connection
from django.db.models.expressions import RawSQL

from accounts.visibility import Viewer
from indexing.models import RepositoryStatus
from indexing.visible import visible_repositories
from reposearch.domain_errors import DomainError
from search.retrieval.query import (
    DOC_WORDS,
    TEST_WORDS,
    paths_regex,
    query_intent,
    query_mentions,
    usage_question,
)
from search.retrieval.replicas import replica_aliases
from search.types import ScopeApplied, SearchRequest

LEFT_OUT_BY_DEFAULT = "left out by default"


class UnknownRepositories(DomainError, LookupError):
    """Some requested repository ids do not exist (or the viewer may not see them: the same
    error, word for word, so that a restricted repository cannot be told from a missing one)."""

    http_status = HTTPStatus.NOT_FOUND

    def __init__(self, ids: Sequence[UUID]) -> None:
        super().__init__("unknown repository id(s): " + ", ".join(str(i) for i in ids))
        self.ids = list(ids)

    def api_code(self) -> str:
        return "unknown_repository"

    def api_details(self) -> dict[str, Any]:
        return {"repo_ids": [str(i) for i in self.ids]}


def resolve_scope(request: SearchRequest) -> ScopeApplied:
    """The filters a request means, with the automatic test/doc decisions explained."""

    def decide(explicit: bool | None, vocabulary: frozenset[str]) -> tuple[bool, str]:
        if explicit is not None:
            return explicit, "requested"
        word = query_mentions(request.query, vocabulary)
        if word:
            return True, f"query mentions {word!r}"
        if vocabulary is DOC_WORDS and request.docs_for_usage_questions:
            usage = usage_question(request.query)
            if usage:
                return True, f"usage question ({usage!r})"
        return False, LEFT_OUT_BY_DEFAULT

    include_tests, tests_reason = decide(request.include_tests, TEST_WORDS)
    include_docs, docs_reason = decide(request.include_docs, DOC_WORDS)
    # Preference follows the question's words only: the explicit flags (the UI's checkboxes)
    # include tests or docs, they do not put them first.
    return ScopeApplied(
        repo_ids=list(request.repo_ids) if request.repo_ids else None,
        languages=[lang.lower() for lang in request.languages] if request.languages else None,
        path_globs=list(request.path_globs) if request.path_globs else None,
        include_tests=include_tests,
        include_docs=include_docs,
        tests_reason=tests_reason,
        docs_reason=docs_reason,
        prefer_tests=include_tests and query_intent(request.query, TEST_WORDS) is not None,
        prefer_docs=include_docs and query_intent(request.query, DOC_WORDS) is not None,
    )


class UnknownBranch(DomainError, LookupError):
    """No repository in scope has an indexed branch of that name (or matching that glob)."""

    http_status = HTTPStatus.NOT_FOUND

    def __init__(self, branches: Sequence[str], nearest: Sequence[str] = ()) -> None:
        hint = f" — did you mean {', '.join(f'branch:{n}' for n in nearest)}?" if nearest else ""
        super().__init__(f"no indexed repository is on branch:{branches[0]}{hint}")
        self.branches = list(branches)
        self.nearest = list(nearest)

    def api_code(self) -> str:
        return "unknown_branch"

    def api_details(self) -> dict[str, Any]:
        near = {"suggestions": self.nearest, "suggestion": self.nearest[0]} if self.nearest else {}
        return {"branches": list(self.branches), **near}


ALL_BRANCHES = "*"


@dataclass
class ScopeRepository:
    """One repository's branch in scope (the default branch unless a branch filter said
    otherwise); a repository may be in scope with several branches."""

    id: UUID
    name: str
    commit: str
    generation: int
    chunks: int
    branch: str = ""
    indexed_at: datetime | None = None
    default: bool = True  # its default branch (rows: ``generation = active_generation``)
    # The build of its generation's full-text statistics (``xmin`` of a facet row: every row of
    # a build is written by one transaction), read with the scope; None: not read, or none.
    # ``fulltext.corpus_stats`` keeps the counts of a build between searches.
    statistics: int | None = None
    # The WAL position a read replica must have replayed to serve it (its last swap's, or the
    # primary's now when none is recorded) and the primary's now (search.retrieval.replicas).
    replay_needed: int = 0
    primary_lsn: int = 0


def scope_repositories(
    repo_ids: Sequence[UUID] | None, viewer: Viewer, branches: Sequence[str] | None = None
) -> list[ScopeRepository]:
    """Ready repositories in scope that ``viewer`` may see: the one gate of full-text, vector
    and hybrid search (every retrieval query keeps to these ids). Raises UnknownRepositories
    for ids that do not exist or are not visible to ``viewer``.

    ``branches`` (names or globs; ``*``: every indexed branch) chooses branches other than
    the default; None searches each repository's default branch. Raises UnknownBranch when
    no repository in scope has such a branch indexed."""
    sql, params = _repositories_sql(viewer, tuple(repo_ids) if repo_ids else None)
    found: list[tuple[Any, ...]] = []
    if sql:
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            found = cursor.fetchall()
    if repo_ids:
        known = {row[0] for row in found}
        unknown = [rid for rid in dict.fromkeys(repo_ids) if rid not in known]
        if unknown:
            raise UnknownRepositories(unknown)
    defaults = [
        ScopeRepository(
            id=pk,
            name=name,
            commit=commit,
            generation=gen,
            chunks=chunks,
            branch=branch,
            indexed_at=indexed_at,
            statistics=statistics,
            replay_needed=primary_lsn if swapped is None else swapped,
            primary_lsn=primary_lsn,
        )
        for (
            pk,
            name,
            commit,
            gen,
            chunks,
            status,
            branch,
            indexed_at,
            statistics,
            swapped,
            primary_lsn,
        ) in found
        if status == RepositoryStatus.READY and gen > 0
    ]
    if not branches:
        return defaults
    return _on_branches(defaults, list(branches))


@functools.lru_cache(maxsize=512)
def _repositories_sql(
    viewer: Viewer, repo_ids: tuple[UUID, ...] | None
) -> tuple[str, tuple[Any, ...]]:
    """The statement of the repositories ``viewer`` may see (of ``repo_ids``), built by the
    ORM once per viewer and ids (building it cost more than running it on every search). Its
    columns need no conversion from the database's (UUIDs, text, integers, timestamps)."""
    replicas = bool(replica_aliases())  # else no position is needed: none is read
    rows = visible_repositories(viewer).annotate(
        statistics=RawSQL(STATISTICS_SQL, ()),  # noqa: S611 (constants)
        swapped=RawSQL(SWAPPED_SQL if replicas else "NULL::bigint", ()),  # noqa: S611
        primary_lsn=RawSQL(PRIMARY_LSN_SQL if replicas else "0", ()),  # noqa: S611
    )
    if repo_ids:
        rows = rows.filter(pk__in=list(repo_ids))
    try:
        columns = (*SCOPE_COLUMNS, "statistics", "swapped", "primary_lsn")
        return rows.values_list(*columns).query.sql_with_params()
    except EmptyResultSet:  # a filter no row can pass: no statement at all
        return "", ()


SCOPE_COLUMNS = ("pk", "name", "last_indexed_commit", "active_generation", "chunk_count", "status",
                 "branch", "last_indexed_at")  # fmt: skip
# The build of the live generation's statistics: one index probe per repository.
STATISTICS_SQL = (
    "SELECT f.xmin::text::bigint FROM search_chunkfacetstat f"
    " WHERE f.repository_id = indexing_repository.id"
    " AND f.generation = indexing_repository.active_generation LIMIT 1"
)


# Where the WAL stood after its last swap (indexing.models.SwapPosition), and the primary's now:
# the position a read replica must have replayed (search.retrieval.replicas).
SWAPPED_SQL = (
    "SELECT p.lsn FROM indexing_swapposition p WHERE p.repository_id = indexing_repository.id"
)
PRIMARY_LSN_SQL = "(pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::bigint"


def _named(name: str, patterns: list[str]) -> bool:
    return any(p == ALL_BRANCHES or fnmatchcase(name, p) for p in patterns)


def _on_branches(defaults: list[ScopeRepository], patterns: list[str]) -> list[ScopeRepository]:
    from indexing.models import IndexedBranch

    by_id = {r.id: r for r in defaults}
    chosen = [r for r in defaults if _named(r.branch, patterns)]
    others = IndexedBranch.objects.filter(repository_id__in=list(by_id), generation__gt=0)
    names = {r.branch for r in defaults}
    for row in others.order_by("repository_id", "name"):
        names.add(row.name)
        if not _named(row.name, patterns):
            continue
        default = by_id[row.repository_id]
        chosen.append(
            ScopeRepository(
                id=default.id,
                name=default.name,
                commit=row.last_indexed_commit,
                generation=row.generation,
                chunks=row.chunk_count,
                branch=row.name,
                indexed_at=row.last_indexed_at,
                default=False,
                replay_needed=default.replay_needed,
                primary_lsn=default.primary_lsn,
            )
        )
    if not chosen and defaults:
        # The indexed branch names nearest the first pattern, of the repositories in scope.
        by_lower = {name.lower(): name for name in sorted(names) if name}
        near = difflib.get_close_matches(patterns[0].lower(), by_lower, n=3, cutoff=0.7)
        raise UnknownBranch(patterns, [by_lower[n] for n in near])
    return chosen


def live_chunks_sql(repositories: Sequence[ScopeRepository]) -> str:
    """The join keeping chunks (alias ``c``) to the branches in scope: ``LIVE_CHUNKS_SQL``
    when every repository is on its default branch (the default rows need no membership);
    otherwise each (repository, generation) in scope, its own rows and those it shares
    (``indexing.models.SharedFile``). Only UUIDs and integers are written into the SQL."""
    if all(r.default for r in repositories):
        return LIVE_CHUNKS_SQL
    pairs = ", ".join(f"('{UUID(str(r.id))}'::uuid, {int(r.generation)})" for r in repositories)
    # typed UUIDs and integers only
    return (
        "JOIN indexing_repository r ON r.id = c.repository_id AND r.status = 'ready'"  # noqa: S608
        f" AND ((c.repository_id, c.generation) IN (VALUES {pairs})"
        " OR EXISTS (SELECT 1 FROM indexing_sharedfile s WHERE s.file_id = c.file_id"
        f" AND (s.repository_id, s.generation) IN (VALUES {pairs})))"
    )


@dataclass
class ScopeFilter:
    """SQL for the chunk-level filters (alias ``c``) plus the repositories in scope."""

    repositories: list[ScopeRepository]
    sql: str = "TRUE"
    params: list[Any] = field(default_factory=list)
    chunk_level: bool = False  # any filter beyond repository + generation
    include_tests: bool = True  # (also in ``sql``; the term postings carry these two flags)
    include_docs: bool = True
    # Non-empty: only chunks of these kinds ("tests", "docs") are in scope (the left-out lists).
    only_kinds: frozenset[str] = frozenset()
    # With ``only_kinds``: ``sql`` without its kinds clause (the scope plus those kinds).
    wide_sql: str = ""

    @property
    def repository_ids(self) -> list[UUID]:
        return list(dict.fromkeys(r.id for r in self.repositories))

    @property
    def default_branches(self) -> bool:
        """Every repository on its default branch (its rows need no membership join)."""
        return all(r.default for r in self.repositories)

    @property
    def live_sql(self) -> str:
        """The live-chunks join for these repositories' branches (``live_chunks_sql``)."""
        return live_chunks_sql(self.repositories)


def build_scope_filter(
    scope: ScopeApplied,
    repositories: list[ScopeRepository],
    exclude_path_globs: Sequence[str] | None = None,
    exclude_languages: Sequence[str] | None = None,
) -> ScopeFilter:
    clauses: list[str] = []
    params: list[Any] = []
    if not scope.include_tests:
        clauses.append("NOT c.is_test")
    if not scope.include_docs:
        clauses.append("NOT c.is_doc")
    if scope.languages:
        clauses.append("lower(c.language) = ANY(%s)")
        params.append(list(scope.languages))
    regex = paths_regex(scope.path_globs)
    if regex:
        clauses.append("c.path ~ %s")
        params.append(regex)
    if exclude_languages:
        clauses.append("NOT lower(c.language) = ANY(%s)")
        params.append([lang.lower() for lang in exclude_languages])
    excluded = paths_regex(exclude_path_globs)
    if excluded:
        clauses.append("c.path !~ %s")
        params.append(excluded)
    return ScopeFilter(
        repositories=repositories,
        sql=" AND ".join(clauses) or "TRUE",
        params=params,
        chunk_level=bool(clauses),
        include_tests=scope.include_tests,
        include_docs=scope.include_docs,
    )


def build_left_out_filter(
    scope: ScopeApplied,
    repositories: list[ScopeRepository],
    exclude_path_globs: Sequence[str] | None = None,
    exclude_languages: Sequence[str] | None = None,
) -> ScopeFilter | None:
    """The chunks ``scope`` left out *by default* (tests, docs or both; every other filter
    kept), or None when it left nothing out that way (``search.ranking.fusion.place_left_out``)."""
    tests = not scope.include_tests and scope.tests_reason == LEFT_OUT_BY_DEFAULT
    docs = not scope.include_docs and scope.docs_reason == LEFT_OUT_BY_DEFAULT
    if not (tests or docs):
        return None
    # Explicitly excluded kinds stay excluded; the left-out kinds are the only ones searched.
    wide = ScopeApplied(
        repo_ids=scope.repo_ids,
        languages=scope.languages,
        path_globs=scope.path_globs,
        include_tests=scope.include_tests or tests,
        include_docs=scope.include_docs or docs,
    )
    found = build_scope_filter(wide, repositories, exclude_path_globs, exclude_languages)
    found.wide_sql = found.sql
    kinds = " OR ".join(
        clause for clause, wanted in (("c.is_test", tests), ("c.is_doc", docs)) if wanted
    )
    found.sql = f"({kinds})" if found.sql == "TRUE" else f"{found.sql} AND ({kinds})"
    found.chunk_level = True
    found.only_kinds = frozenset(
        kind for kind, wanted in (("tests", tests), ("docs", docs)) if wanted
    )
    return found


LIVE_CHUNKS_SQL = (
    "JOIN indexing_repository r ON r.id = c.repository_id AND c.generation = r.active_generation"
    " AND r.status = 'ready'"
)
