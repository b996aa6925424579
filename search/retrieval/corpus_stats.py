"""Corpus statistics for BM25: document frequencies, chunk counts and lengths per generation.

They are built by indexing, inside each generation swap's transaction
(``indexing.services.search_stats.refresh_search_stats``), so a generation is never live without
them: the term postings of the new generation (derived from the chunks' stored ``tsvector``;
their lengths are the document frequencies) and the facet counts, paid at index time, never per
query.
``corpus_stats`` reads them for a query's terms over the repositories in scope (the counts of a
build it has read before are kept in this process: the scope statement reads each generation's
build, ``ScopeRepository.statistics``); for a repository whose
live generation has no statistics (a failed build, or rows inserted by hand) it counts them on
the fly, which is slower but exact.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from uuid import UUID

from django.db.backends.utils import CursorWrapper

from indexing.postings_format import buckets
from search.retrieval.db import array_literal, connection
from search.retrieval.postings_cache import KeptLists, kept_lists
from search.retrieval.scope import ScopeRepository, live_chunks_sql

logger = logging.getLogger(__name__)


@dataclass
class CorpusStats:
    """BM25's view of the corpus in scope (summed over the branches' generations in scope)."""

    documents: int = 0
    total_length: int = 0
    df: dict[str, int] = field(default_factory=dict)
    computed_on_the_fly: list[UUID] = field(default_factory=list)
    # The terms' whole lists kept between searches (``corpus_stats(keep_lists=True)``: mapped from
    # the host's files, or in this process's memory; ``postings_cache``),
    # keyed by what they were built from: repository, generation, and ``xmin`` of its facet
    # rows (a new transaction with every rebuild of its statistics).
    kept: KeptLists | None = None

    @property
    def average_length(self) -> float:
        return self.total_length / self.documents if self.documents else 1.0


def corpus_stats(
    repositories: Sequence[ScopeRepository],
    terms: Sequence[str],
    *,
    keep_lists: bool = False,
    timeout_ms: int = 5000,
) -> CorpusStats:
    """Summed N, total length and per-term document frequency over the generations in scope
    (each repository's branch: its default branch's live generation, or another's).

    ``keep_lists``: the terms' whole posting lists are taken from those kept between searches
    (``search.retrieval.postings_cache``, read once when they are not there) and the document
    frequencies counted from them (``stats.kept``; ``timeout_ms`` for the statement that reads
    those not kept yet); else, or when they cannot be read, summed from the lists' rows in the
    database."""
    stats = CorpusStats(df=dict.fromkeys(terms, 0))
    if not repositories:
        return stats
    probed = {(r.id, r.generation): r.statistics for r in repositories}
    covered: list[tuple[UUID, int, int]] = []
    unknown: list[tuple[UUID, int]] = []
    for (repository_id, generation), build in probed.items():
        found = _COUNTS.get((repository_id, generation, build)) if build is not None else None
        if found is None or build is None:
            unknown.append((repository_id, generation))
            continue
        covered.append((repository_id, generation, build))
        stats.documents += found[0]
        stats.total_length += found[1]
    with contextlib.ExitStack() as stack:
        if unknown:
            cursor = stack.enter_context(connection.cursor())
            covered += _read_counts(cursor, unknown, probed, stats)
        if covered and terms:
            stats.kept = kept_lists(covered, list(terms), timeout_ms) if keep_lists else None
            if stats.kept is not None:
                stats.df.update(stats.kept.document_frequencies())
            else:
                cursor = stack.enter_context(connection.cursor())
                _sum_document_frequencies(cursor, [(r, g) for r, g, _b in covered], terms, stats)
        found_pairs = {(r, g) for r, g, _b in covered}
        missing = [r for r in repositories if (r.id, r.generation) not in found_pairs]
        if missing:
            cursor = stack.enter_context(connection.cursor())
            _count_on_the_fly(cursor, missing, terms, stats)
    return stats


# (repository, generation, build of its statistics) -> (chunks, total length): a build's
# counts never change, so a scope that read the builds (``ScopeRepository.statistics``) needs
# no statement for those counted before.
_COUNTS: dict[tuple[UUID, int, int], tuple[int, int]] = {}
MAX_COUNTS = 4096


def _read_counts(
    cursor: CursorWrapper,
    pairs: list[tuple[UUID, int]],
    probed: dict[tuple[UUID, int], int | None],
    stats: CorpusStats,
) -> list[tuple[UUID, int, int]]:
    """The chunk counts and lengths of ``pairs`` (repository, generation) into ``stats``; those
    with statistics, with their build."""
    cursor.execute(
        """
        SELECT f.repository_id, f.generation, sum(f.chunks), sum(f.total_length),
               max(f.xmin::text::bigint)
        FROM search_chunkfacetstat f
        JOIN unnest(%s::uuid[], %s::int[]) AS g(repository_id, generation)
          ON f.repository_id = g.repository_id AND f.generation = g.generation
        GROUP BY f.repository_id, f.generation
        """,
        [array_literal(r for r, _g in pairs), array_literal(g for _r, g in pairs)],
    )
    covered = []
    for repository_id, generation, count, total_length, built in cursor.fetchall():
        covered.append((repository_id, int(generation), int(built)))
        stats.documents += int(count)
        stats.total_length += int(total_length or 0)
        if probed.get((repository_id, int(generation))) == int(built):
            if len(_COUNTS) >= MAX_COUNTS:
                _COUNTS.clear()  # (builds of generations retired long ago)
            _COUNTS[(repository_id, int(generation), int(built))] = (
                int(count),
                int(total_length or 0),
            )
    return covered


def _sum_document_frequencies(
    cursor: CursorWrapper,
    generations: list[tuple[UUID, int]],
    terms: Sequence[str],
    stats: CorpusStats,
) -> None:
    """The terms' document frequencies summed over the generations' lists, long and packed."""
    ids = array_literal(r for r, _g in generations)
    numbers = array_literal(g for _r, g in generations)
    cursor.execute(
        """
        WITH g AS (SELECT * FROM unnest(%s::uuid[], %s::int[]) AS g(repository_id, generation))
        SELECT t.term, sum(t.df)
        FROM search_termpostings t
        JOIN g ON g.repository_id = t.repository_id AND g.generation = t.generation
        WHERE t.term = ANY(%s)
        GROUP BY t.term
        UNION ALL
        SELECT u.term, sum(u.df)
        FROM search_termbucket b
        JOIN g ON g.repository_id = b.repository_id AND g.generation = b.generation
        CROSS JOIN LATERAL unnest(b.terms, b.dfs) AS u(term, df)
        WHERE b.bucket = ANY(%s) AND u.term = ANY(%s)
        GROUP BY u.term
        """,
        [ids, numbers, list(terms), buckets(terms), list(terms)],
    )
    for term, count in cursor.fetchall():
        stats.df[term] += int(count)


def _count_on_the_fly(
    cursor: CursorWrapper,
    repositories: list[ScopeRepository],
    terms: Sequence[str],
    stats: CorpusStats,
) -> None:
    ids = list(dict.fromkeys(r.id for r in repositories))
    logger.info("search statistics missing; counting on the fly repositories=%s", ids)
    live = f"FROM indexing_chunk c {live_chunks_sql(repositories)} WHERE r.id = ANY(%s)"
    cursor.execute(f"SELECT count(*), coalesce(sum(c.token_count), 0) {live}", [ids])
    documents, total_length = cursor.fetchone()
    if not documents:
        return
    stats.documents += int(documents)
    stats.total_length += int(total_length)
    stats.computed_on_the_fly.extend(ids)
    for term in terms:
        cursor.execute(
            f"SELECT count(*) {live} AND c.search_vector @@ quote_literal(%s)::tsquery",
            [ids, term],
        )
        stats.df[term] += int(cursor.fetchone()[0])
