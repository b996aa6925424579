"""Search hits for fused candidates: one statement reads the chunks that are still live."""

from __future__ import annotations

from django.db import connection

from search.ranking.fusion import FusedCandidate
from search.retrieval.scope import LIVE_CHUNKS_SQL
from search.types import SearchHit

_HYDRATE_SQL = f"""
    SELECT c.id, c.repository_id, r.name, r.last_indexed_commit, c.path, c."index", c.content,
           c.language, c.start_line, c.end_line, c.symbol, c.kind, c.is_test, c.is_doc,
           r.branch, r.last_indexed_at
    FROM indexing_chunk c {LIVE_CHUNKS_SQL}
    WHERE c.id = ANY(%s)
"""  # noqa: S608


def hydrate_hits(candidates: list[FusedCandidate]) -> dict[int, SearchHit]:
    """The chunks behind ``candidates`` (still live: a swap mid-search drops the old ones)."""
    if not candidates:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(_HYDRATE_SQL, [[c.chunk_id for c in candidates]])
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
        )
    return hits
