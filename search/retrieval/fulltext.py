"""Full-text retrieval in PostgreSQL: the exact BM25 top-k, or ``ts_rank_cd`` over capped candidates.

BM25 (the default) is read from the term postings (``search.retrieval.postings``): lists
ordered by impact, read only as deep as it takes to be sure of the top ``limit`` over every
match, with the scope and permission filters applied in the statement that reads the final
chunks. The rest of this module is the older path, kept for quoted phrases (hard filters), for
the ``ts_rank_cd`` baseline and for repositories whose statistics are not built yet:

BM25 in SQL. ``ts_rank_cd`` of a one-term query with normalisation 0 is exactly the sum of the
term's position weights in the ``tsvector``, so with weights {D, C, B, A} it is a field-weighted
term frequency (symbol x3, path x1.5, body x1 -- BM25F-style). Each query term gets one such
call per candidate; document frequencies, N and the average length come from
``search.retrieval.corpus_stats`` (kept per repository generation), so::

    score = sum_t idf(t) * tf(t) * (k1 + 1) / (tf(t) + k1 * (1 - b + b * len / avglen))
    idf(t) = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))

times ``1 + all_terms_boost`` when the chunk holds every informative query word (OR semantics
for recall, a boost for the chunks that match the whole question).

Never rank every match of a broad query (ranking is linear in the rows ranked: 400 ms for a
common token over 136 k chunks). Candidates are at most ``cap`` rows that hold all the
informative words plus at most ``cap`` rows that hold the rarest terms (terms taken from the
rarest up while their summed document frequency stays under ``cap``); when all terms together
match fewer than ``cap`` rows, every match is ranked. Quoted phrases are hard filters.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass, field
from typing import Any

from django.db import connection

from search.retrieval import parallel
from search.retrieval.bm25 import BM25
from search.retrieval.corpus_stats import CorpusStats, corpus_stats
from search.retrieval.db import search_cursor
from search.retrieval.facts import ChunkFacts
from search.retrieval.postings import exact_top_k, merge_top_k, want_of
from search.retrieval.postings_memory import memory_top_k
from search.retrieval.query import (
    ParsedQuery,
    lexeme,
    required_tsquery,
    tsquery_all,
    tsquery_any,
)
from search.retrieval.scope import ScopeFilter, ScopeRepository

COMMON_SHARE = 0.25  # a word in more than this share of chunks is not "informative"
MAX_SCORED_TERMS = 12
# Over this many chunks in scope, a query of several tokens has its exact top-k read in
# SPLIT_GROUPS groups of repositories at once (``split_groups``; docs/evaluation.md, "Full text
# in two groups of repositories at once": identical results, hybrid p95 at 1 M chunks -26 %).
SPLIT_MIN_CHUNKS = 100_000
SPLIT_GROUPS = 2


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


def plan_candidates(
    parsed: ParsedQuery, stats: CorpusStats, cap: int, ranking: str
) -> CandidatePlan:
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
    # The ts_rank_cd baseline scores every term (it has no idf to tell them apart).
    scored = present
    if ranking == "bm25":
        scored = [t for t in by_rarity if stats.df[t] <= common] or by_rarity
    return CandidatePlan(scored, tiers, informative, True)


def split_groups(scope: ScopeFilter, query_tokens: int = 2) -> list[ScopeFilter]:
    """``scope`` cut by repository into ``SPLIT_GROUPS`` scopes of about the same number of
    chunks, whose exact top-k are read at the same time on their own connections -- or
    ``[scope]`` when that would not pay: a one-token query (an identifier, one word: a few
    lists, decided in a round or two, where a second connection only adds its own statements),
    a small scope, one repository, an open transaction
    (another connection could not see its rows), or retrieval threads already busy with other
    searches (the split spends more CPU in all to answer sooner, which only pays on idle cores;
    a search's own vector lists leave room for it)."""
    repositories = scope.repositories
    if (
        query_tokens < 2
        or len(repositories) < SPLIT_GROUPS
        or sum(r.chunks for r in repositories) < SPLIT_MIN_CHUNKS
        or connection.in_atomic_block
        or parallel.busy() > parallel.WORKERS - SPLIT_GROUPS
    ):
        return [scope]
    groups: list[list[ScopeRepository]] = [[] for _ in range(SPLIT_GROUPS)]
    sizes = [0] * SPLIT_GROUPS
    for repository in sorted(repositories, key=lambda r: (-r.chunks, str(r.id))):
        smallest = sizes.index(min(sizes))
        groups[smallest].append(repository)
        sizes[smallest] += repository.chunks
    return [dataclasses.replace(scope, repositories=group) for group in groups if group]


def either(scope: ScopeFilter, other: ScopeFilter) -> ScopeFilter:
    """Chunks in ``scope`` or in ``other`` (same repositories): what one pass reads by id."""
    return dataclasses.replace(
        scope,
        sql=f"(({scope.sql}) OR ({other.sql}))",
        params=[*scope.params, *other.params],
        chunk_level=True,
        include_tests=scope.include_tests or other.include_tests,
        include_docs=scope.include_docs or other.include_docs,
        only_kinds=frozenset(),
    )


def fulltext_search(
    parsed: ParsedQuery,
    scope: ScopeFilter,
    *,
    limit: int,
    cap: int,
    ranking: str = "bm25",
    all_terms_boost: float = 0.25,
    timeout_ms: int = 5000,
    use_postings: bool = True,
    left_out: ScopeFilter | None = None,
) -> FulltextList:
    """The best ``limit`` chunks for ``parsed`` in scope, with BM25 or ts_rank_cd scores
    (``use_postings=False``: the capped path, for comparison). With ``left_out`` (the chunks
    the scope left out by default, same repositories) its list too, in ``.left_out``: from the
    same reading of the postings when they rank, the same as a search of its own."""
    result = FulltextList(query=parsed.text, ranked=[])
    if left_out is not None:
        result.left_out = FulltextList(query=parsed.text, ranked=[])
    if parsed.is_empty or not scope.repositories:
        result.detail["reason"] = "no searchable terms" if parsed.is_empty else "no repositories"
        return result
    required = required_tsquery(parsed)
    # The term postings are the default branches' lists: another branch is ranked over its
    # chunks below (with the default branch's statistics, which it mostly shares).
    postings = use_postings and scope.default_branches and ranking == "bm25" and not required
    stats = corpus_stats(
        scope.repository_ids, parsed.terms, keep_lists=postings, timeout_ms=timeout_ms
    )
    plan = plan_candidates(parsed, stats, cap, ranking)
    present, informative = plan.scored, plan.informative
    result.detail.update(
        terms=list(parsed.terms),
        scored_terms=present,
        documents=stats.documents,
        matches_at_most=sum(stats.df.get(t, 0) for t in parsed.terms),
        capped=plan.capped,
    )
    if stats.computed_on_the_fly:
        result.detail["stats_computed_on_the_fly"] = [str(r) for r in stats.computed_on_the_fly]
    if not present:
        return result

    if postings and not stats.computed_on_the_fly:
        terms = [t for t in parsed.terms if stats.df.get(t, 0) > 0][:MAX_SCORED_TERMS]
        idfs = [idf(stats.documents, stats.df[t]) for t in terms]
        scopes = [scope] if left_out is None else [scope, left_out]
        wants = [want_of(s, min(limit, cap)) for s in scopes]
        if stats.kept is not None:
            in_memory = memory_top_k(
                stats.kept,
                terms,
                idfs,
                informative,
                scopes,
                wants,
                average=stats.average_length or 1.0,
                all_terms_boost=all_terms_boost,
                timeout_ms=timeout_ms,
            )
            result.ranked = in_memory.ranked[0]
            result.facts = in_memory.facts
            result.detail.update(
                scored_terms=terms,
                capped=result.detail["matches_at_most"] > cap,
                exact=True,
                in_memory=True,
                rounds=1,
                postings_read=in_memory.postings_read,
                chunks_checked=in_memory.checked,
                lists_loaded=stats.kept.loaded,
            )
            if result.left_out is not None:
                result.left_out.ranked = in_memory.ranked[1]
                result.left_out.detail = {"exact": True, "same_pass": True}
                result.detail["left_out_exact"] = True
            return result
        top_k = functools.partial(
            exact_top_k,
            terms,
            idfs,
            informative,
            averages=stats.repository_average,
            average=stats.average_length or 1.0,
            wants=wants,
            all_terms_boost=all_terms_boost,
            timeout_ms=timeout_ms,
            seed=tsquery_all(informative) if len(informative) > 1 and plan.capped else None,
            # every match fits under the cap: read the lists whole, in one round
            first_depth=0 if plan.capped else cap,
        )
        groups = split_groups(
            scope if left_out is None else either(scope, left_out), len(parsed.text.split())
        )
        if len(groups) == 1:
            top = top_k(groups[0])
        else:
            beside = [parallel.run_beside(top_k, group) for group in groups[1:]]
            top = merge_top_k([top_k(groups[0]), *(f.result() for f in beside)], wants)
            result.detail["parallel_groups"] = len(groups)
        result.ranked = top.ranked[0]
        result.detail.update(
            scored_terms=terms,
            capped=result.detail["matches_at_most"] > cap,
            exact=top.exact[0],
            rounds=top.rounds,
            postings_read=top.postings_read,
            chunks_checked=top.checked,
        )
        if result.left_out is not None:
            result.left_out.ranked = top.ranked[1]
            result.left_out.detail = {"exact": top.exact[1], "same_pass": True}
            result.detail["left_out_exact"] = top.exact[1]
        return result
    result.ranked = _capped(parsed, scope, plan, stats, required, limit, cap, ranking,
                            all_terms_boost, timeout_ms)  # fmt: skip
    if left_out is not None:
        result.left_out = fulltext_search(
            parsed, left_out, limit=limit, cap=cap, ranking=ranking,
            all_terms_boost=all_terms_boost, timeout_ms=timeout_ms, use_postings=use_postings,
        )  # fmt: skip
    return result


def _capped(
    parsed: ParsedQuery,
    scope: ScopeFilter,
    plan: CandidatePlan,
    stats: CorpusStats,
    required: str | None,
    limit: int,
    cap: int,
    ranking: str,
    all_terms_boost: float,
    timeout_ms: int,
) -> list[tuple[int, float]]:
    """The older path: ``plan``'s capped candidates ranked in one statement."""
    present, informative, tiers = plan.scored, plan.informative, plan.tiers
    base_where = f"r.id = ANY(%s) AND {scope.sql}"
    base_params: list[Any] = [scope.repository_ids, *scope.params]
    if required:
        base_where += " AND c.search_vector @@ %s::tsquery"
        base_params.append(required)
    # Only constants and %s placeholders are interpolated into the SQL text below.
    candidate_sql = " UNION ".join(
        f"(SELECT c.id FROM indexing_chunk c {scope.live_sql}"  # noqa: S608
        f" WHERE {base_where} AND c.search_vector @@ %s::tsquery LIMIT %s)"
        for _ in tiers
    )
    params: list[Any] = []
    for tier in tiers:
        params += [*base_params, tier, cap]

    all_words_q = tsquery_all(informative)
    if ranking == "ts_rank_cd":
        score_sql = "ts_rank_cd(c.search_vector, %s::tsquery)"
        score_params: list[Any] = [tsquery_any(present)]
        tf_sql, tf_params = "", []
    else:
        weights, scale = BM25.rank_weights()
        k1, b = BM25.k1, BM25.b
        tf_columns = ", ".join(
            f"ts_rank_cd(%s::float4[], c.search_vector, %s::tsquery, 0) * {scale} AS tf{i}"
            for i in range(len(present))
        )
        tf_sql = f"CROSS JOIN LATERAL (SELECT {tf_columns}) tf"
        tf_params = [p for term in present for p in (weights, lexeme(term))]
        avg = stats.average_length or 1.0
        norm = f"({k1} * (1 - {b} + {b} * greatest(c.token_count, 1) / %s::float8))"
        parts = [f"%s * tf{i} * {k1 + 1} / (tf{i} + {norm})" for i in range(len(present))]
        score_sql = " + ".join(parts)
        score_params = [p for term in present for p in (idf(stats.documents, stats.df[term]), avg)]
    sql = f"""
        WITH cand AS ({candidate_sql})
        SELECT c.id,
               ({score_sql}) * (CASE WHEN c.search_vector @@ %s::tsquery THEN %s ELSE 1 END)
                 AS score
        FROM indexing_chunk c JOIN cand ON cand.id = c.id
        {tf_sql}
        ORDER BY score DESC, c.id
        LIMIT %s
    """  # noqa: S608
    # Placeholders in text order: candidates, SELECT list (score, boost), LATERAL tf, LIMIT.
    all_params = [*params, *score_params, all_words_q, 1.0 + all_terms_boost, *tf_params, limit]
    # The candidate query must not fall back to reading the chunk table for common words.
    with search_cursor(timeout_ms, enable_seqscan="off") as cursor:
        cursor.execute(sql, all_params)
        return [(int(cid), float(score)) for cid, score in cursor.fetchall()]
