"""``sym:NAME`` / ``type:symbol``: the definitions tree-sitter found, exact > prefix > substring.

A definition's name is ``Chunk.symbol_name`` (the last part of ``symbol``, e.g. ``send`` of
``Client.send``); matching is case-insensitive. A definition split over several chunks is one
hit (its first chunk). Order: exact names, then prefixes, then names containing it; shorter
names first within a tier, then repository, path and line -- stable, so equal queries agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal
from uuid import UUID

from search.exact.candidates import CandidateScope, escape_like
from search.retrieval.db import search_cursor
from search.retrieval.scope import LIVE_CHUNKS_SQL

Tier = Literal["exact", "prefix", "substring"]
TIERS: tuple[Tier, ...] = ("exact", "prefix", "substring")


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


_DEFINITIONS_SQL = """
    SELECT c.id, r.id, r.name, r.url, r.last_indexed_commit, c.path, c.language, c.is_test,
           c.is_doc, c.start_line, c.end_line, c.symbol, c.kind, c.content, c."index", c.file_id,
           CASE WHEN lower(c.symbol_name) = lower(%s) THEN 0
                WHEN lower(c.symbol_name) LIKE lower(%s) THEN 1 ELSE 2 END AS tier
    FROM indexing_chunk c {live}
    WHERE {scope} AND c.symbol_name <> '' AND c.symbol_name ILIKE %s
    ORDER BY tier, length(c.symbol_name), r.name, c.path, c.start_line
    LIMIT %s
"""


def find_definitions(
    name: str, scope: CandidateScope, *, limit: int, timeout_ms: int = 4000
) -> tuple[list[DefinitionHit], bool]:
    """Up to ``limit`` definitions matching ``name`` and whether there are more."""
    scope_sql, params = scope.sql()
    escaped = escape_like(name)
    sql = _DEFINITIONS_SQL.format(live=LIVE_CHUNKS_SQL, scope=scope_sql)
    with search_cursor(timeout_ms) as cursor:
        cursor.execute(sql, [name, escaped + "%", *params, "%" + escaped + "%", limit * 4 + 1])
        rows = cursor.fetchall()
    hits: list[DefinitionHit] = []
    seen: set[tuple[int, str]] = set()
    for row in rows:
        *fields, file_id, tier = row
        key = (file_id, fields[11])  # a definition split over chunks: its first chunk only
        if key in seen:
            continue
        seen.add(key)
        hits.append(DefinitionHit(*fields, TIERS[tier]))  # type: ignore[call-arg]
    return hits[:limit], len(hits) > limit or len(rows) > limit * 4
