"""Full-text retrieval: the exact BM25 top-k from the term postings, or a capped SQL fallback.

**The engine** (``search.retrieval.postings_memory``): the whole posting lists of the query's terms
in the repositories in scope (kept between searches: mapped from the host's files,
``postings_cache``) ranked in one compiled pass; the exact top ``limit`` over every match, with the
scope and permission filters applied in the one statement that reads the ranked chunks (none when
the scope filters by test/doc flags only and their facts were read before). A quoted
phrase is such a filter (the chunks whose ``tsvector`` holds it); its words score like any others.

Every branch's live generation has its own postings, so a search of other branches than the
default ranks the same way (several branches of one repository: their statistics summed, a
chunk they share ranked once).

**The fallback** (``_capped``): a generation whose statistics are missing (counted on the fly),
and lists that cannot be read whole (ids spanning 2^32, or the statement timed out); the trace
says which (``fallback``). Same BM25, in SQL: ``ts_rank_cd`` of a one-term query with
normalisation 0 is exactly the sum of the term's position weights in the ``tsvector``, so with
weights {D, C, B, A} it is a field-weighted term frequency (symbol x3, path x1.5, body x1 --
BM25F-style)::

    score = sum_t idf(t) * tf(t) * (k1 + 1) / (tf(t) + k1 * (1 - b + b * len / avglen))
    idf(t) = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))

times ``1 + all_terms_boost`` when the chunk holds every informative query word. It never
ranks every match of a broad query: candidates are at most ``cap`` rows that hold all the
informative words plus at most ``cap`` rows that hold the rarest terms (taken from the rarest
up while their summed document frequency stays under ``cap``); when all terms together match
fewer than ``cap`` rows, every match is ranked, and then it equals the engine.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

from indexing.bm25 import BM25
from search.retrieval.corpus_stats import CorpusStats, corpus_stats
from search.retrieval.db import search_cursor
from search.retrieval.hydrate import ChunkFacts
from search.retrieval.postings_memory import memory_top_k, want_of
from search.retrieval.query import (
    ParsedQuery,
    lexeme,
    required_tsquery,
    tsquery_all,
    tsquery_any,
)
from search.retrieval.scope import ScopeFilter

COMMON_SHARE = 0.25  # a word in more than this share of chunks is not "informative"
MAX_SCORED_TERMS = 12


@dataclass
class FulltextList:
    query: str
    ranked: list[tuple[int, float]]  # (chunk id, score), best first
    detail: dict[str, Any] = field(default_factory=dict)
    left_out: FulltextList | None = None  # with ``left_out=``: that scope's list
    # what the ranking signals need of the chunks it read live on the way (``LIVE_CHUNKS_SQL``)
    facts: dict[int, ChunkFacts] = field(default_factory=dict)


def idf(documents: int, df: int) -> float:
    return math.log(1.0 + (documents - df + 0.5) / (df + 0.5))


@dataclass
class CandidatePlan:
    scored: list[str]  # terms that contribute to the score
    tiers: list[str]  # tsqueries whose first ``cap`` matches are the candidates
    informative: list[str]  # the words judged for the all-terms boost
    capped: bool  # the matches did not all fit under the cap


def plan_candidates(parsed: ParsedQuery, stats: CorpusStats, cap: int) -> CandidatePlan:
    """Which terms score and which rows are ranked (see the module docstring)."""
    present = [t for t in parsed.terms if stats.df.get(t, 0) > 0][:MAX_SCORED_TERMS]
    words = [w for w in parsed.words if stats.df.get(w, 0) > 0]
    common = COMMON_SHARE * stats.documents
    informative = [w for w in words if stats.df[w] <= common] or words
    if sum(stats.df[t] for t in present) <= cap:
        return CandidatePlan(present, [tsquery_any(present)] if present else [], informative, False)
    by_rarity = sorted(present, key=lambda t: (stats.df[t], t))
    rare: list[str] = []
    total = 0
    for term in by_rarity:
        if rare and total + stats.df[term] > cap:
            break
        rare.append(term)
        total += stats.df[term]
    tiers = [tsquery_any(rare)]
    if len(informative) > 1:
        tiers.insert(0, tsquery_all(informative))
    # Scoring costs one ts_rank_cd call per term and candidate: over a capped set, words in
    # more than a quarter of the chunks (idf < 1.3) are left out unless nothing else is left.
    scored = [t for t in by_rarity if stats.df[t] <= common] or by_rarity
    return CandidatePlan(scored, tiers, informative, True)


def with_phrase(scope: ScopeFilter | None, tsquery: str | None) -> ScopeFilter | None:
    """``scope`` narrowed to the chunks whose ``tsvector`` matches ``tsquery`` (the query's
    quoted phrases: hard filters), or ``scope`` itself when there is none."""
    if scope is None or not tsquery:
        return scope
    return dataclasses.replace(
        scope,
        sql=f"({scope.sql}) AND c.search_vector @@ %s::tsquery",
        params=[*scope.params, tsquery],
        chunk_level=True,
    )


def fallback_reason(stats: CorpusStats, engine: bool) -> str | None:
    """Why the capped SQL ranks this search instead of the engine (None: it does not)."""
    if not engine:
        return "asked for"
    if stats.computed_on_the_fly:
        return "statistics missing (counted on the fly)"
    if stats.kept is None:
        return "posting lists not read whole"
    return None


def fulltext_search(
    parsed: ParsedQuery,
    scope: ScopeFilter,
    *,
    limit: int,
    cap: int,
    all_terms_boost: float = 0.25,
    timeout_ms: int = 5000,
    use_postings: bool = True,
    left_out: ScopeFilter | None = None,
) -> FulltextList:
    """The best ``limit`` chunks for ``parsed`` in scope, with their BM25 scores
    (``use_postings=False``: the capped fallback, for comparison). With ``left_out`` (the
    chunks the scope left out by default, same repositories) its list too, in ``.left_out``:
    from the same pass of the engine, or the same as a search of its own."""
    result = FulltextList(query=parsed.text, ranked=[])
    if left_out is not None:
        result.left_out = FulltextList(query=parsed.text, ranked=[])
    if parsed.is_empty or not scope.repositories:
        result.detail["reason"] = "no searchable terms" if parsed.is_empty else "no repositories"
        return result
    phrases = required_tsquery(parsed)
    searched = with_phrase(scope, phrases) or scope
    stats = corpus_stats(
        scope.repositories, parsed.terms, keep_lists=use_postings, timeout_ms=timeout_ms
    )
    plan = plan_candidates(parsed, stats, cap)
    result.detail.update(
        terms=list(parsed.terms),
        scored_terms=plan.scored,
        documents=stats.documents,
        matches_at_most=sum(stats.df.get(t, 0) for t in parsed.terms),
        capped=plan.capped,
    )
    if stats.computed_on_the_fly:
        result.detail["stats_computed_on_the_fly"] = [str(r) for r in stats.computed_on_the_fly]
    if not plan.scored:
        return result
    fallback = fallback_reason(stats, use_postings)
    if fallback is None:
        _in_memory(result, parsed, searched, with_phrase(left_out, phrases), stats, plan, limit,
                   cap, all_terms_boost, timeout_ms)  # fmt: skip
        return result
    result.detail["fallback"] = fallback
    result.ranked = _capped(searched, plan, stats, limit, cap, all_terms_boost, timeout_ms)
    if left_out is not None:
        result.left_out = fulltext_search(
            parsed, left_out, limit=limit, cap=cap, all_terms_boost=all_terms_boost,
            timeout_ms=timeout_ms, use_postings=use_postings,
        )  # fmt: skip
    return result


def _in_memory(
    result: FulltextList,
    parsed: ParsedQuery,
    scope: ScopeFilter,
    left_out: ScopeFilter | None,
    stats: CorpusStats,
    plan: CandidatePlan,
    limit: int,
    cap: int,
    all_terms_boost: float,
    timeout_ms: int,
) -> None:
    """The engine's exact top-k of ``scope`` (and of ``left_out``, same pass) into ``result``."""
    assert stats.kept is not None
    terms = [t for t in parsed.terms if stats.df.get(t, 0) > 0][:MAX_SCORED_TERMS]
    scopes = [scope] if left_out is None else [scope, left_out]
    found = memory_top_k(
        stats.kept,
        terms,
        [idf(stats.documents, stats.df[t]) for t in terms],
        plan.informative,
        scopes,
        [want_of(s, min(limit, cap)) for s in scopes],
        average=stats.average_length or 1.0,
        all_terms_boost=all_terms_boost,
        timeout_ms=timeout_ms,
    )
    result.ranked = found.ranked[0]
    result.facts = found.facts
    result.detail.update(
        scored_terms=terms,
        capped=result.detail["matches_at_most"] > cap,
        exact=True,
        postings_read=found.postings_read,
        chunks_checked=found.checked,
        lists_loaded=stats.kept.loaded,
    )
    if result.left_out is not None:
        result.left_out.ranked = found.ranked[1]
        result.left_out.detail = {"exact": True, "same_pass": True}


def _capped(
    scope: ScopeFilter,
    plan: CandidatePlan,
    stats: CorpusStats,
    limit: int,
    cap: int,
    all_terms_boost: float,
    timeout_ms: int,
) -> list[tuple[int, float]]:
    """The fallback: ``plan``'s capped candidates ranked by BM25 in one statement."""
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
    average = stats.average_length or 1.0
    score_params = [p for t in present for p in (idf(stats.documents, stats.df[t]), average)]
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
