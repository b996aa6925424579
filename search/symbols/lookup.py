"""The definitions tree-sitter found, by name: exact > prefix > substring > fuzzy.

A definition's name is ``Chunk.symbol_name`` (the last part of ``symbol``, e.g. ``send`` of
``Client.send``; the rest is its ``container``); matching is case-insensitive. Tiers: the exact
name, names starting with it, names containing it, then names merely similar to it (``pg_trgm``
similarity at its default threshold, 0.3: ``get_user`` finds ``get_users`` and ``fetch_user``),
most similar first. Within a tier shorter names come first, then repository, path and line --
stable, so equal queries agree. A definition split over several chunks is one hit spanning them,
and a class spans its members (its own chunk is only its header).

One service for ``sym:NAME`` in the query language, ``GET /api/symbols`` and the MCP tool
``find_symbol``; every caller passes a scope of repositories the viewer may see.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal
from uuid import UUID

from search.exact.candidates import CandidateScope, escape_like
from search.retrieval.db import search_cursor
from search.retrieval.scope import LIVE_CHUNKS_SQL

Tier = Literal["exact", "prefix", "substring", "fuzzy"]
TIERS: tuple[Tier, ...] = ("exact", "prefix", "substring", "fuzzy")
MAX_NAME_CHARS = 200


@dataclass(frozen=True)
class DefinitionHit:
    chunk_id: int
    repo_id: UUID
    repo_name: str
    repo_url: str
    commit: str
    path: str
    language: str
    is_test: bool
    is_doc: bool
    start_line: int
    end_line: int
    symbol: str
    kind: str
    content: str
    chunk_index: int
    tier: Tier
    branch: str = ""  # with a branch filter (``CandidateScope.branches``): the branch it is on

    @property
    def name(self) -> str:
        return self.symbol.rsplit(".", 1)[-1]

    @property
    def container(self) -> str:
        return self.symbol.rsplit(".", 1)[0] if "." in self.symbol else ""


# ``%%`` is pg_trgm's similarity operator (``%`` escaped for the driver); with ILIKE beside it
# both are answered by the trigram index on symbol_name (migration search.0003).
_DEFINITIONS_SQL = """
    SELECT c.id, r.id, r.name, r.url, {commit}, c.path, c.language, c.is_test,
           c.is_doc, c.start_line, c.end_line, c.symbol, c.kind, c.content, c."index", c.file_id,
           CASE WHEN lower(c.symbol_name) = lower(%s) THEN 0
                WHEN c.symbol_name ILIKE %s THEN 1
                WHEN c.symbol_name ILIKE %s THEN 2 ELSE 3 END AS tier,
           similarity(c.symbol_name, %s) AS closeness, {branch}
    FROM indexing_chunk c {live}
    WHERE {scope} {kinds} AND c.symbol_name <> ''
      AND (c.symbol_name ILIKE %s {fuzzy})
    ORDER BY tier, CASE WHEN c.symbol_name ILIKE %s THEN 0 ELSE -similarity(c.symbol_name, %s) END,
             length(c.symbol_name), {order}, c.path, c.start_line
    LIMIT %s
"""


def find_definitions(
    name: str,
    scope: CandidateScope,
    *,
    limit: int,
    kinds: list[str] | None = None,
    fuzzy: bool = True,
    timeout_ms: int = 4000,
) -> tuple[list[DefinitionHit], bool]:
    """Up to ``limit`` definitions matching ``name`` and whether there are more."""
    scope_sql, params = scope.sql()
    escaped = escape_like(name)
    contains = "%" + escaped + "%"
    kinds_sql = "AND lower(c.kind) = ANY(%s)" if kinds else ""
    kind_params = [[k.lower() for k in kinds]] if kinds else []
    fuzzy_sql = "OR c.symbol_name %% %s" if fuzzy else ""
    live, live_params = scope.live_join()
    sql = _DEFINITIONS_SQL.format(
        live=live,
        scope=scope_sql,
        kinds=kinds_sql,
        fuzzy=fuzzy_sql,
        commit=scope.commit_column,
        branch=scope.branch_column,
        order=scope.order_column,
    )
    fetch = limit * 4 + 1
    with search_cursor(timeout_ms) as cursor:
        cursor.execute(
            sql,
            [
                name,
                escaped + "%",
                contains,
                name,
                *live_params,
                *params,
                *kind_params,
                contains,
                *([name] if fuzzy else []),
                contains,
                name,
                fetch,
            ],
        )
        rows = cursor.fetchall()
    hits: list[DefinitionHit] = []
    first: dict[tuple[int, str, str], int] = {}
    file_ids: dict[int, int] = {}
    for row in rows:
        *fields, file_id, tier, _closeness, branch = row
        key = (file_id, fields[11], branch)
        if key in first:  # a definition split over chunks: one hit from its first to its last
            index = first[key]
            hits[index] = replace(hits[index], end_line=max(hits[index].end_line, fields[10]))
            continue
        first[key] = len(hits)
        file_ids[fields[0]] = file_id
        hits.append(DefinitionHit(*fields, TIERS[tier], branch))  # type: ignore[call-arg]
    return with_members(hits[:limit], file_ids), len(hits) > limit or len(rows) >= fetch


# Go to definition: the exact name only, the clicked file's repository and language first, then
# the name's exact spelling, code before tests, then (repository, path, line).
_NAMED_SQL = """
    SELECT c.id, r.id, r.name, r.url, r.last_indexed_commit, c.path, c.language, c.is_test,
           c.is_doc, c.start_line, c.end_line, c.symbol, c.kind, c.content, c."index", c.file_id
    FROM indexing_chunk c {live}
    WHERE {scope} AND lower(c.symbol_name) = lower(%s)
    ORDER BY (r.id = %s) DESC, (lower(c.language) = lower(%s)) DESC, (c.symbol_name = %s) DESC,
             c.is_test, c.is_doc, r.name, c.path, c.start_line
    LIMIT %s
"""


def definitions_named(
    name: str,
    scope: CandidateScope,
    *,
    prefer_repo: UUID | None,
    prefer_language: str,
    limit: int,
    timeout_ms: int = 4000,
) -> tuple[list[DefinitionHit], bool]:
    """Definitions whose name is ``name`` (any case), the preferred repository and language
    first, and whether there are more than ``limit``."""
    scope_sql, params = scope.sql()
    sql = _NAMED_SQL.format(live=LIVE_CHUNKS_SQL, scope=scope_sql)
    fetch = limit * 4 + 1
    with search_cursor(timeout_ms) as cursor:
        cursor.execute(
            sql, [*params, name, prefer_repo or UUID(int=0), prefer_language, name, fetch]
        )
        rows = cursor.fetchall()
    return _merged(rows, "exact", limit, fetch)


# A class's chunk is its header; its methods are chunks of their own (``Client.send``). A
# definition spans to the last line of anything defined inside it, in the same file.
_SPAN_SQL = """
    SELECT h.file_id, h.symbol, max(c.end_line)
    FROM unnest(%s::bigint[], %s::text[], %s::text[]) AS h(file_id, symbol, pattern)
    JOIN indexing_chunk c ON c.file_id = h.file_id AND c.symbol LIKE h.pattern
    GROUP BY h.file_id, h.symbol
"""


def with_members(hits: list[DefinitionHit], file_ids: dict[int, int]) -> list[DefinitionHit]:
    """``hits`` with ``end_line`` reaching the last line of their members (``file_ids``: each
    hit's chunk id -> file id)."""
    if not hits:
        return hits
    files = [file_ids[h.chunk_id] for h in hits]
    with search_cursor(2000) as cursor:
        cursor.execute(
            _SPAN_SQL,
            [files, [h.symbol for h in hits], [escape_like(h.symbol) + ".%" for h in hits]],
        )
        ends = {(file_id, symbol): end for file_id, symbol, end in cursor.fetchall()}
    return [
        replace(h, end_line=max(h.end_line, ends.get((file_ids[h.chunk_id], h.symbol), 0)))
        for h in hits
    ]


def _merged(
    rows: list[tuple[object, ...]], tier: Tier, limit: int, fetch: int
) -> tuple[list[DefinitionHit], bool]:
    hits: list[DefinitionHit] = []
    first: dict[tuple[object, object], int] = {}
    file_ids: dict[int, int] = {}
    for row in rows:
        *fields, file_id = row
        key = (file_id, fields[11])
        if key in first:
            index = first[key]
            end = max(hits[index].end_line, int(fields[10]))  # type: ignore[call-overload]
            hits[index] = replace(hits[index], end_line=end)
            continue
        first[key] = len(hits)
        file_ids[int(fields[0])] = int(file_id)  # type: ignore[call-overload]
        hits.append(DefinitionHit(*fields, tier))  # type: ignore[arg-type,call-arg]
    return with_members(hits[:limit], file_ids), len(hits) > limit or len(rows) >= fetch
