"""What the ranking signals need to know about a candidate chunk (``ChunkFacts``), read by id.

``FACTS_COLUMNS`` is what a statement selects for them (alias ``c`` for the chunk), so a
statement that reads the chunks anyway -- the full-text pass checking its best chunks against
the scope (``postings_memory``) -- brings them along, and ``chunk_facts`` then reads only those
no list brought (``known``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connection

from search.retrieval.db import array_literal
from search.retrieval.query import normalise_symbol
from search.retrieval.scope import LIVE_CHUNKS_SQL


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
