"""What a search reads about chunks by id: the facts its ranking needs, and the hits it shows.

**Facts** (``ChunkFacts``): path, test/doc flags, symbol, length and kind of a candidate.
``FACTS_COLUMNS`` is what a statement selects for them (alias ``c`` for the chunk), so a
statement that reads the chunks anyway -- the full-text pass checking its best chunks against
the scope (``postings_memory``) -- brings them along, and ``chunk_facts`` then reads only those
no list brought (``known``).

**Hits** (``hydrate_hits``): one statement reads the chunks of the fused candidates that are still
live. On the default branches a hit names its repository's branch, commit and index time. With a
branch filter a chunk may be stored once for several branches in scope: the hit names the first of
them (the default branch first) and lists them all in ``branches``, which costs one more statement
(the files' memberships, ``indexing.models.SharedFile``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from search.retrieval.db import array_literal, connection
from search.retrieval.query import normalise_symbol
from search.retrieval.scope import LIVE_CHUNKS_SQL, ScopeFilter, ScopeRepository
from search.types import FusedCandidate, SearchHit


@dataclass(frozen=True)
class ChunkFacts:
    path: str
    is_test: bool
    is_doc: bool
    symbol: str = ""  # normalised (search.retrieval.query.normalise_symbol)
    lines: int = 0  # end_line - start_line + 1 (learned fusion's chunk length)
    kind: str = ""  # function, method, class, module, window, section ...


# (path per repository, test, doc, symbol, lines, kind), read by ``facts_of``
FACTS_COLUMNS = (
    "c.repository_id::text || '/' || c.path, c.is_test, c.is_doc, c.symbol,"
    " c.end_line - c.start_line + 1, c.kind"
)
FACTS_WIDTH = 6  # how many columns that is


def facts_of(row: Sequence[Any]) -> ChunkFacts:
    """The facts of ``row``: the ``FACTS_WIDTH`` columns of ``FACTS_COLUMNS``."""
    path, is_test, is_doc, symbol, lines, kind = row
    return ChunkFacts(path, is_test, is_doc, normalise_symbol(symbol or ""), int(lines), kind or "")


def chunk_facts(
    chunk_ids: Sequence[int],
    live: str = LIVE_CHUNKS_SQL,
    known: Mapping[int, ChunkFacts] | None = None,
) -> dict[int, ChunkFacts]:
    """Path (per repository) and test/doc flags of live chunks, by id (``live``: the scope's
    live-chunks join, ``search.retrieval.scope.live_chunks_sql``). Those in ``known`` (read
    live under the same join moments before) are not read again."""
    known = known or {}
    found = {cid: known[cid] for cid in chunk_ids if cid in known}
    missing = [cid for cid in chunk_ids if cid not in known]
    if not missing:
        return found
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT c.id, {FACTS_COLUMNS} FROM indexing_chunk c {live}"  # noqa: S608
            " WHERE c.id = ANY(%s::bigint[])",
            [array_literal(missing)],
        )
        found.update((int(row[0]), facts_of(row[1:])) for row in cursor.fetchall())
    return found


# The hits

_HYDRATE_SQL = """
    SELECT c.id, c.repository_id, r.name, r.last_indexed_commit, c.path, c."index", c.content,
           c.language, c.start_line, c.end_line, c.symbol, c.kind, c.is_test, c.is_doc,
           r.branch, r.last_indexed_at, c.generation, c.file_id
    FROM indexing_chunk c {live}
    WHERE c.id = ANY(%s)
"""


def hydrate_hits(
    candidates: list[FusedCandidate], scope: ScopeFilter | None = None
) -> dict[int, SearchHit]:
    """The chunks behind ``candidates`` (still live: a swap mid-search drops the old ones)."""
    if not candidates:
        return {}
    live = scope.live_sql if scope is not None else LIVE_CHUNKS_SQL
    with connection.cursor() as cursor:
        cursor.execute(_HYDRATE_SQL.format(live=live), [[c.chunk_id for c in candidates]])
        rows = cursor.fetchall()
    hits = {}
    for row in rows:
        hits[row[0]] = SearchHit(
            chunk_id=row[0],
            repo_id=row[1],
            repo_name=row[2],
            commit=row[3],
            file_path=row[4],
            chunk_index=row[5],
            content=row[6],
            language=row[7],
            start_line=row[8],
            end_line=row[9],
            symbol=row[10],
            kind=row[11],
            is_test=row[12],
            is_doc=row[13],
            branch=row[14],
            indexed_at=row[15],
            branches=[row[14]],
        )
    if scope is not None and not scope.default_branches:
        _name_branches(hits, rows, scope)
    return hits


def _name_branches(hits: dict[int, SearchHit], rows: list[Any], scope: ScopeFilter) -> None:
    in_scope = {(r.id, r.generation): r for r in scope.repositories}
    files = list({row[17] for row in rows})
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT file_id, repository_id, generation FROM indexing_sharedfile"
            " WHERE file_id = ANY(%s)",
            [files],
        )
        shared: dict[int, list[tuple[Any, int]]] = {}
        for file_id, repository_id, generation in cursor.fetchall():
            shared.setdefault(file_id, []).append((repository_id, generation))
    for row in rows:
        keys = [(row[1], row[16]), *shared.get(row[17], [])]
        on: list[ScopeRepository] = [in_scope[key] for key in keys if key in in_scope]
        on.sort(key=lambda r: (not r.default, r.branch))
        if not on:
            continue
        hit, first = hits[row[0]], on[0]
        hit.branch, hit.commit, hit.indexed_at = first.branch, first.commit, first.indexed_at
        hit.branches = [r.branch for r in on]
