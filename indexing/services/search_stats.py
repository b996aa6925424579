"""Building a generation's search statistics: the facet counts and the term postings.

``refresh_search_stats`` runs inside each generation swap's transaction (``in_swap`` of
``indexing.services.branch_generations.swap_branch_generation``, passed by the index stage), so
a generation is never live without them, and ``manage.py doctor --repair`` runs it for a live
generation that has none. It writes, for the repository's live generation, the facet counts
(``search_chunkfacetstat``: chunks and token totals per language and test/doc flags) and the term
postings (``search_termpostings``, ``search_termbucket``; their format, which the readers share,
is ``indexing.postings_format``), derived from the chunks' stored ``tsvector``: paid at index
time, never per query. Search only reads them (``search.retrieval.corpus_stats`` and the
postings readers); the tables' models are in ``search.models``.
"""

from __future__ import annotations

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
            CROSS JOIN (SELECT min(id) AS base FROM indexing_chunk
                        WHERE repository_id = %(repository)s AND generation = %(generation)s) b
            WHERE c.repository_id = %(repository)s AND c.generation = %(generation)s
              AND length(u.lexeme) <= 128
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


def build_postings(
    cursor: CursorWrapper, repository_id: UUID, generation: int, average: float
) -> None:
    """Write the posting lists of one generation (its old rows already deleted)."""
    cursor.execute(
        _BUILD,
        {"repository": repository_id, "generation": generation, "average": average or 1.0},
    )


def refresh_search_stats(repository_id: UUID) -> None:
    """Rebuild the statistics of the repository's live generation; drop those of others."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_advisory_xact_lock(hashtext('search-stats:' || %s))", [str(repository_id)]
        )
        cursor.execute(
            "SELECT active_generation FROM indexing_repository WHERE id = %s", [repository_id]
        )
        row = cursor.fetchone()
        if row is None:
            return
        generation = int(row[0])
        cursor.execute("DELETE FROM search_termpostings WHERE repository_id = %s", [repository_id])
        cursor.execute("DELETE FROM search_termbucket WHERE repository_id = %s", [repository_id])
        cursor.execute(
            "DELETE FROM search_chunkfacetstat WHERE repository_id = %s", [repository_id]
        )
        if generation == 0:
            return
        cursor.execute(
            """
            INSERT INTO search_chunkfacetstat
                (repository_id, generation, language, is_test, is_doc, chunks, total_length)
            SELECT repository_id, generation, language, is_test, is_doc, count(*), sum(token_count)
            FROM indexing_chunk WHERE repository_id = %s AND generation = %s
            GROUP BY repository_id, generation, language, is_test, is_doc
            """,
            [repository_id, generation],
        )
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
            build_postings(cursor, repository_id, generation, int(total_length or 0) / chunks)
