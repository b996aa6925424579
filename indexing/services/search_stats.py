"""Building a generation's search statistics: the facet counts and the term postings.

``refresh_search_stats`` runs inside each generation swap's transaction (``in_swap`` of
``indexing.services.branch_generations.swap_branch_generation``, passed by the index stage), so
a generation is never live without them, and ``manage.py doctor --repair`` runs it for a live
generation that has none. Every branch's live generation has its own: the default branch's over
the chunks it owns, another branch's over those it owns and those of the files it shares with
other generations (the chunk ids do not change when ownership moves between generations, so a
swap of one branch leaves the others' statistics true). It writes, per generation, the facet counts
(``search_chunkfacetstat``: chunks and token totals per language and test/doc flags) and the term
postings (``search_termpostings``, ``search_termbucket``; their format, which the readers share,
is ``indexing.postings_format``), derived from the chunks' stored ``tsvector``: paid at index
time, never per query. Search only reads them (``search.retrieval.fulltext.corpus_stats`` and the
postings readers); the tables' models are in ``search.models``.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.db import connection, transaction
from django.db.backends.utils import CursorWrapper

from indexing.bm25 import BM25
from indexing.postings_format import BUCKET_SQL, ID_BITS, MAX_LEN, RARE_DF, TF2_SQL

BUILD_WORK_MEM = "256MB"
_BUILD = f"""
WITH lists AS MATERIALIZED (
    SELECT p.lexeme, p.part, count(*) AS df,
           int8send(min(p.block_base)) || string_agg(
               int8send(((p.id - p.block_base) << 32) | (p.len << 16) | (p.flags << 14) | p.tf2),
               ''::bytea
               ORDER BY p.tf2 / (p.tf2 + 2 * {BM25.k1} * (1 - {BM25.b} + {BM25.b} * greatest(p.len, 1)
                                                      / %(average)s::float8)) DESC, p.id)
             AS postings
    FROM (
        SELECT q.*, ((q.id - q.base) >> {ID_BITS}) * 4 + q.flags AS part,
               q.base + (((q.id - q.base) >> {ID_BITS}) << {ID_BITS}) AS block_base
        FROM (
            SELECT c.id, b.base, least(c.token_count, {MAX_LEN}) AS len,
                   c.is_test::int + 2 * c.is_doc::int AS flags, u.lexeme, {TF2_SQL} AS tf2
            FROM indexing_chunk c CROSS JOIN LATERAL unnest(c.search_vector) u
            CROSS JOIN (SELECT min(c.id) AS base FROM indexing_chunk c WHERE {{members}}) b
            WHERE {{members}} AND length(u.lexeme) <= 128
        ) q
    ) p
    GROUP BY p.lexeme, p.part
), long_lists AS (
    INSERT INTO search_termpostings (repository_id, generation, term, part, df, postings)
    SELECT %(repository)s, %(generation)s, lexeme, part, df, postings
    FROM lists WHERE df > {RARE_DF}
)
INSERT INTO search_termbucket (repository_id, generation, bucket, terms, parts, dfs, postings)
SELECT %(repository)s, %(generation)s, bucket, array_agg(lexeme ORDER BY lexeme, part),
       array_agg(part ORDER BY lexeme, part), array_agg(df ORDER BY lexeme, part),
       array_agg(postings ORDER BY lexeme, part)
FROM (SELECT *, {BUCKET_SQL.format(term="lexeme")} AS bucket FROM lists WHERE df <= {RARE_DF}) r
GROUP BY bucket
"""  # noqa: S608 -- only constants are interpolated; values are placeholders


# The chunks a generation shows (alias ``c``): those it owns, and for another branch than the
# default, those of the files it shares with other generations (``indexing_sharedfile``).
OWNED = "c.repository_id = %(repository)s AND c.generation = %(generation)s"
OWNED_OR_SHARED = (
    "c.repository_id = %(repository)s AND (c.generation = %(generation)s OR c.file_id IN"
    " (SELECT s.file_id FROM indexing_sharedfile s"
    "  WHERE s.repository_id = %(repository)s AND s.generation = %(generation)s))"
)
_FACETS = """
INSERT INTO search_chunkfacetstat
    (repository_id, generation, language, is_test, is_doc, chunks, total_length)
SELECT %(repository)s, %(generation)s, c.language, c.is_test, c.is_doc, count(*),
       sum(c.token_count)
FROM indexing_chunk c WHERE {members}
GROUP BY c.language, c.is_test, c.is_doc
"""


def build_postings(
    cursor: CursorWrapper, repository_id: UUID, generation: int, average: float, members: str
) -> None:
    """Write the posting lists of one generation (its old rows already deleted) over the
    chunks ``members`` (``OWNED`` or ``OWNED_OR_SHARED``) selects."""
    cursor.execute(
        _BUILD.format(members=members),
        {"repository": repository_id, "generation": generation, "average": average or 1.0},
    )


def refresh_search_stats(repository_id: UUID, generation: int | None = None) -> None:
    """Rebuild the statistics of the repository's live ``generation`` (None: of every live
    generation, the default branch's and each other branch's); drop those of generations no
    branch has live."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_advisory_xact_lock(hashtext('search-stats:' || %s))", [str(repository_id)]
        )
        cursor.execute(
            "SELECT r.active_generation, coalesce(array_agg(b.generation)"
            "  FILTER (WHERE b.generation > 0), '{}')"
            " FROM indexing_repository r LEFT JOIN indexing_indexedbranch b"
            "   ON b.repository_id = r.id WHERE r.id = %s GROUP BY r.id",
            [repository_id],
        )
        row = cursor.fetchone()
        if row is None:
            return
        default, branches = int(row[0]), [int(g) for g in row[1]]
        live = [g for g in (default, *branches) if g > 0]
        for table in STATS_TABLES:
            cursor.execute(
                f"DELETE FROM {table} WHERE repository_id = %s AND NOT generation = ANY(%s)",  # noqa: S608
                [repository_id, live],
            )
        for target in live if generation is None else [g for g in live if g == generation]:
            _build(cursor, repository_id, target, shared=target != default)


def drop_search_stats(cursor: CursorWrapper, repository_id: UUID, generation: int) -> None:
    """Delete the statistics of a generation that is no longer live (a deleted branch's)."""
    for table in STATS_TABLES:
        cursor.execute(
            f"DELETE FROM {table} WHERE repository_id = %s AND generation = %s",  # noqa: S608
            [repository_id, generation],
        )


STATS_TABLES = ("search_termpostings", "search_termbucket", "search_chunkfacetstat")


def _build(cursor: CursorWrapper, repository_id: UUID, generation: int, *, shared: bool) -> None:
    """The facet counts and term postings of one generation (``shared``: another branch than
    the default, whose chunks include those of the files it shares)."""
    drop_search_stats(cursor, repository_id, generation)
    members = OWNED_OR_SHARED if shared else OWNED
    values: dict[str, Any] = {"repository": repository_id, "generation": generation}
    cursor.execute(_FACETS.format(members=members), values)
    cursor.execute(
        "SELECT sum(chunks), sum(total_length) FROM search_chunkfacetstat"
        " WHERE repository_id = %s AND generation = %s",
        [repository_id, generation],
    )
    chunks, total_length = cursor.fetchone()
    if chunks:
        # The lists' sort (every (lexeme, chunk) pair of the generation) in memory, not on
        # disk: ~80 MB for 12 k chunks.
        cursor.execute(f"SET LOCAL work_mem = '{BUILD_WORK_MEM}'")
        build_postings(cursor, repository_id, generation, int(total_length or 0) / chunks, members)
