"""Full text's one fallback: BM25 in SQL over capped candidates, and the statistics it needs.

``search.retrieval.fulltext`` ranks here what its engine cannot: a generation whose statistics
are missing (a failed build, or rows inserted by hand: ``count_on_the_fly``), and lists that
cannot be read whole (ids spanning 2^32, or the statement timed out: the document frequencies
are then summed from the lists' rows, ``sum_document_frequencies``); the trace says which.

Same BM25, in SQL: ``ts_rank_cd`` of a one-term query with normalisation 0 is exactly the sum of
the term's position weights in the ``tsvector``, so with weights {D, C, B, A} it is a
field-weighted term frequency (symbol x3, path x1.5, body x1 -- BM25F-style)::

    score = sum_t idf(t) * tf(t) * (k1 + 1) / (tf(t) + k1 * (1 - b + b * len / avglen))
    idf(t) = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))

times ``1 + all_terms_boost`` when the chunk holds every informative query word. It never
ranks every match of a broad query: candidates are at most ``cap`` rows that hold all the
informative words plus at most ``cap`` rows that hold the rarest terms (taken from the rarest
up while their summed document frequency stays under ``cap``); when all terms together match
fewer than ``cap`` rows, every match is ranked, and then it equals the engine.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from django.db.backends.utils import CursorWrapper

from indexing.bm25 import BM25
from indexing.postings_format import buckets
from search.retrieval.db import array_literal, search_cursor
from search.retrieval.query import lexeme, tsquery_all, tsquery_any
from search.retrieval.scope import ScopeFilter, ScopeRepository, live_chunks_sql

logger = logging.getLogger(__name__)

COMMON_SHARE = 0.25  # a word in more than this share of chunks is not "informative"


@dataclass
class CandidatePlan:
    scored: list[str]  # terms that contribute to the score
    tiers: list[str]  # tsqueries whose first ``cap`` matches are the candidates
    informative: list[str]  # the words judged for the all-terms boost
    capped: bool  # the matches did not all fit under the cap


def plan_candidates(
    present: list[str], informative: list[str], df: dict[str, int], documents: int, cap: int
) -> CandidatePlan:
    """Which of the ``present`` terms score and which rows are ranked (the module docstring)."""
    common = COMMON_SHARE * documents
    if sum(df[t] for t in present) <= cap:
        return CandidatePlan(present, [tsquery_any(present)] if present else [], informative, False)
    by_rarity = sorted(present, key=lambda t: (df[t], t))
    rare: list[str] = []
    total = 0
    for term in by_rarity:
        if rare and total + df[term] > cap:
            break
        rare.append(term)
        total += df[term]
    tiers = [tsquery_any(rare)]
    if len(informative) > 1:
        tiers.insert(0, tsquery_all(informative))
    # Scoring costs one ts_rank_cd call per term and candidate: over a capped set, words in
    # more than a quarter of the chunks (idf < 1.3) are left out unless nothing else is left.
    scored = [t for t in by_rarity if df[t] <= common] or by_rarity
    return CandidatePlan(scored, tiers, informative, True)


def capped_top_k(
    scope: ScopeFilter,
    plan: CandidatePlan,
    idfs: list[float],
    average: float,
    limit: int,
    cap: int,
    all_terms_boost: float,
    timeout_ms: int,
) -> list[tuple[int, float]]:
    """``plan``'s capped candidates ranked by BM25 in one statement (``idfs``: of ``plan.scored``)."""
    present, informative, tiers = plan.scored, plan.informative, plan.tiers
    base_where = f"r.id = ANY(%s) AND {scope.sql}"
    base_params: list[Any] = [scope.repository_ids, *scope.params]
    # Only constants and %s placeholders are interpolated into the SQL text below.
    candidate_sql = " UNION ".join(
        f"(SELECT c.id FROM indexing_chunk c {scope.live_sql}"  # noqa: S608
        f" WHERE {base_where} AND c.search_vector @@ %s::tsquery LIMIT %s)"
        for _ in tiers
    )
    params: list[Any] = []
    for tier in tiers:
        params += [*base_params, tier, cap]
    weights, scale = BM25.rank_weights()
    k1, b = BM25.k1, BM25.b
    tf_columns = ", ".join(
        f"ts_rank_cd(%s::float4[], c.search_vector, %s::tsquery, 0) * {scale} AS tf{i}"
        for i in range(len(present))
    )
    tf_params = [p for term in present for p in (weights, lexeme(term))]
    norm = f"({k1} * (1 - {b} + {b} * greatest(c.token_count, 1) / %s::float8))"
    score_sql = " + ".join(f"%s * tf{i} * {k1 + 1} / (tf{i} + {norm})" for i in range(len(present)))
    score_params = [p for weight in idfs for p in (weight, average)]
    sql = f"""
        WITH cand AS ({candidate_sql})
        SELECT c.id,
               ({score_sql}) * (CASE WHEN c.search_vector @@ %s::tsquery THEN %s ELSE 1 END)
                 AS score
        FROM indexing_chunk c JOIN cand ON cand.id = c.id
        CROSS JOIN LATERAL (SELECT {tf_columns}) tf
        ORDER BY score DESC, c.id
        LIMIT %s
    """  # noqa: S608
    # Placeholders in text order: candidates, SELECT list (score, boost), LATERAL tf, LIMIT.
    all_params = [*params, *score_params, tsquery_all(informative), 1.0 + all_terms_boost,
                  *tf_params, limit]  # fmt: skip
    # The candidate query must not fall back to reading the chunk table for common words.
    with search_cursor(timeout_ms, enable_seqscan="off") as cursor:
        cursor.execute(sql, all_params)
        return [(int(cid), float(score)) for cid, score in cursor.fetchall()]


def sum_document_frequencies(
    cursor: CursorWrapper, generations: list[tuple[UUID, int]], terms: Sequence[str]
) -> dict[str, int]:
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
    found = dict.fromkeys(terms, 0)
    for term, count in cursor.fetchall():
        found[term] += int(count)
    return found


def count_on_the_fly(
    cursor: CursorWrapper, repositories: list[ScopeRepository], terms: Sequence[str]
) -> tuple[int, int, dict[str, int]] | None:
    """Chunks, their total length and the terms' document frequencies of ``repositories``,
    counted from their live chunks (None: they have none)."""
    ids = list(dict.fromkeys(r.id for r in repositories))
    logger.info("search statistics missing; counting on the fly repositories=%s", ids)
    live = f"FROM indexing_chunk c {live_chunks_sql(repositories)} WHERE r.id = ANY(%s)"
    cursor.execute(f"SELECT count(*), coalesce(sum(c.token_count), 0) {live}", [ids])
    documents, total_length = cursor.fetchone()
    if not documents:
        return None
    df = {}
    for term in terms:
        cursor.execute(
            f"SELECT count(*) {live} AND c.search_vector @@ quote_literal(%s)::tsquery",
            [ids, term],
        )
        df[term] = int(cursor.fetchone()[0])
    return int(documents), int(total_length), df
