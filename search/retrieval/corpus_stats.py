"""Corpus statistics for BM25: document frequencies, chunk counts and lengths per generation.

They are built by indexing, inside each generation swap's transaction
(``indexing.services.search_stats.refresh_search_stats``), so a generation is never live without
them: the term postings of the new generation (derived from the chunks' stored ``tsvector``;
their lengths are the document frequencies) and the facet counts, paid at index time, never per
query.
``corpus_stats`` reads them for a query's terms over the repositories in scope; for a
repository whose live generation has no statistics (a failed build, or rows inserted by hand)
it counts them on the fly, which is slower but exact.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from uuid import UUID

from django.db import connection
from django.db.backends.utils import CursorWrapper

from indexing.postings_format import buckets
from search.retrieval.db import array_literal
from search.retrieval.postings_cache import KeptLists, kept_lists

logger = logging.getLogger(__name__)


@dataclass
class CorpusStats:
    """BM25's view of the corpus in scope (summed over repositories)."""

    documents: int = 0
    total_length: int = 0
    df: dict[str, int] = field(default_factory=dict)
    computed_on_the_fly: list[UUID] = field(default_factory=list)
    # Average chunk length of each repository with statistics (the postings' impact order).
    repository_average: dict[UUID, float] = field(default_factory=dict)
    # The terms' whole lists from this process's memory (``corpus_stats(keep_lists=True)``),
    # keyed by what they were built from: repository, generation, and ``xmin`` of its facet
    # rows (a new transaction with every rebuild of its statistics).
    kept: KeptLists | None = None

    @property
    def average_length(self) -> float:
        return self.total_length / self.documents if self.documents else 1.0


def corpus_stats(
    repository_ids: Sequence[UUID],
    terms: Sequence[str],
    *,
    keep_lists: bool = False,
    timeout_ms: int = 5000,
) -> CorpusStats:
    """Summed N, total length and per-term document frequency over the live generations.

    ``keep_lists``: the terms' whole posting lists are taken from the memory of this process
    (``search.retrieval.postings_memory``, read once when they are not there) and the document
    frequencies counted from them (``stats.kept``; ``timeout_ms`` for the statement that reads
    those not kept yet); else, or when they cannot be kept, summed from the lists' rows in the
    database."""
    stats = CorpusStats(df=dict.fromkeys(terms, 0))
    if not repository_ids:
        return stats
    ids = list(repository_ids)
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT r.id, r.active_generation, sum(f.chunks), sum(f.total_length),
                   max(f.xmin::text::bigint)
            FROM indexing_repository r
            JOIN search_chunkfacetstat f
              ON f.repository_id = r.id AND f.generation = r.active_generation
            WHERE r.id = ANY(%s::uuid[])
            GROUP BY r.id
            """,
            [array_literal(ids)],
        )
        covered = []
        for repository_id, generation, count, total_length, built in cursor.fetchall():
            covered.append((repository_id, int(generation), int(built)))
            stats.documents += int(count)
            stats.total_length += int(total_length or 0)
            # as ``build_postings`` ordered the lists (1.0 when every chunk is empty)
            average = int(total_length or 0) / int(count or 1)
            stats.repository_average[repository_id] = average or 1.0
        if covered and terms:
            stats.kept = kept_lists(covered, list(terms), timeout_ms) if keep_lists else None
            if stats.kept is not None:
                stats.df.update(stats.kept.document_frequencies())
            else:
                _sum_document_frequencies(cursor, [r for r, _g, _b in covered], terms, stats)
        missing = [rid for rid in repository_ids if rid not in stats.repository_average]
        if missing:
            _count_on_the_fly(cursor, missing, terms, stats)
    return stats


def _sum_document_frequencies(
    cursor: CursorWrapper, repository_ids: list[UUID], terms: Sequence[str], stats: CorpusStats
) -> None:
    """The terms' document frequencies summed over the repositories' lists, long and packed."""
    cursor.execute(
        """
        SELECT t.term, sum(t.df)
        FROM search_termpostings t
        JOIN indexing_repository r
          ON r.id = t.repository_id AND t.generation = r.active_generation
        WHERE t.repository_id = ANY(%s) AND t.term = ANY(%s)
        GROUP BY t.term
        UNION ALL
        SELECT u.term, sum(u.df)
        FROM search_termbucket b
        JOIN indexing_repository r
          ON r.id = b.repository_id AND b.generation = r.active_generation
        CROSS JOIN LATERAL unnest(b.terms, b.dfs) AS u(term, df)
        WHERE b.repository_id = ANY(%s) AND b.bucket = ANY(%s) AND u.term = ANY(%s)
        GROUP BY u.term
        """,
        [repository_ids, list(terms), repository_ids, buckets(terms), list(terms)],
    )
    for term, count in cursor.fetchall():
        stats.df[term] += int(count)


def _count_on_the_fly(
    cursor: CursorWrapper, repository_ids: list[UUID], terms: Sequence[str], stats: CorpusStats
) -> None:
    logger.info("search statistics missing; counting on the fly repositories=%s", repository_ids)
    live = (
        "FROM indexing_chunk c JOIN indexing_repository r"
        " ON r.id = c.repository_id AND c.generation = r.active_generation WHERE r.id = ANY(%s)"
    )
    cursor.execute(f"SELECT count(*), coalesce(sum(c.token_count), 0) {live}", [repository_ids])
    documents, total_length = cursor.fetchone()
    if not documents:
        return
    stats.documents += int(documents)
    stats.total_length += int(total_length)
    stats.computed_on_the_fly.extend(repository_ids)
    for term in terms:
        cursor.execute(
            f"SELECT count(*) {live} AND c.search_vector @@ quote_literal(%s)::tsquery",
            [repository_ids, term],
        )
        stats.df[term] += int(cursor.fetchone()[0])
