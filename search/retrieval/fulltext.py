"""Full-text retrieval: the exact BM25 top-k from the term postings, and the statistics it reads.

**The engine** (``search.retrieval.postings_memory``): the whole posting lists of the query's terms
in the repositories in scope (kept between searches: mapped from the host's files,
``postings_cache``) ranked in one compiled pass; the exact top ``limit`` over every match, with the
scope and permission filters applied in the one statement that reads the ranked chunks (none when
the scope filters by test/doc flags only and their facts were read before). A quoted
phrase is such a filter (the chunks whose ``tsvector`` holds it); its words score like any others.

Every branch's live generation has its own postings, so a search of other branches than the
default ranks the same way (several branches of one repository: their statistics summed, a
chunk they share ranked once).

**The statistics** (``corpus_stats``): document frequencies, chunk counts and lengths per
generation, built by indexing inside each generation swap's transaction
(``indexing.services.search_stats.refresh_search_stats``), so a generation is never live without
them. They are read for a query's terms over the repositories in scope; the counts of a build
read before are kept in this process (the scope statement reads each generation's build,
``ScopeRepository.statistics``), and the document frequencies are the lengths of the kept lists.

**The one fallback** (``search.retrieval.fulltext_fallback``): BM25 in SQL over capped
candidates, for a generation whose statistics are missing (counted on the fly there) and lists
that cannot be read whole; the trace says which (``fallback``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from django.db.backends.utils import CursorWrapper

from search.retrieval.db import array_literal, connection
from search.retrieval.fulltext_fallback import (
    COMMON_SHARE,
    capped_top_k,
    count_on_the_fly,
    plan_candidates,
    sum_document_frequencies,
)
from search.retrieval.hydrate import ChunkFacts
from search.retrieval.postings_cache import KeptLists, kept_lists
from search.retrieval.postings_memory import memory_top_k, want_of
from search.retrieval.query import ParsedQuery, required_tsquery
from search.retrieval.scope import ScopeFilter, ScopeRepository

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


def informative_words(parsed: ParsedQuery, stats: CorpusStats) -> list[str]:
    """The query's words judged for the all-terms boost: those in at most ``COMMON_SHARE`` of
    the chunks (all of them when every one is more common)."""
    words = [w for w in parsed.words if stats.df.get(w, 0) > 0]
    common = COMMON_SHARE * stats.documents
    return [w for w in words if stats.df[w] <= common] or words


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
    present = [t for t in parsed.terms if stats.df.get(t, 0) > 0][:MAX_SCORED_TERMS]
    informative = informative_words(parsed, stats)
    result.detail.update(
        terms=list(parsed.terms),
        scored_terms=present,
        documents=stats.documents,
        matches_at_most=sum(stats.df.get(t, 0) for t in parsed.terms),
    )
    if stats.computed_on_the_fly:
        result.detail["stats_computed_on_the_fly"] = [str(r) for r in stats.computed_on_the_fly]
    if not present:
        return result
    fallback = fallback_reason(stats, use_postings)
    if fallback is None:
        _in_memory(result, present, informative, searched, with_phrase(left_out, phrases),
                   stats, limit, cap, all_terms_boost, timeout_ms)  # fmt: skip
        return result
    plan = plan_candidates(present, informative, stats.df, stats.documents, cap)
    result.detail.update(fallback=fallback, scored_terms=plan.scored, capped=plan.capped)
    idfs = [idf(stats.documents, stats.df[t]) for t in plan.scored]
    average = stats.average_length or 1.0
    result.ranked = capped_top_k(searched, plan, idfs, average, limit, cap, all_terms_boost,
                                 timeout_ms)  # fmt: skip
    if left_out is not None:
        result.left_out = fulltext_search(
            parsed, left_out, limit=limit, cap=cap, all_terms_boost=all_terms_boost,
            timeout_ms=timeout_ms, use_postings=use_postings,
        )  # fmt: skip
    return result


def _in_memory(
    result: FulltextList,
    terms: list[str],
    informative: list[str],
    scope: ScopeFilter,
    left_out: ScopeFilter | None,
    stats: CorpusStats,
    limit: int,
    cap: int,
    all_terms_boost: float,
    timeout_ms: int,
) -> None:
    """The engine's exact top-k of ``scope`` (and of ``left_out``, same pass) into ``result``."""
    assert stats.kept is not None
    scopes = [scope] if left_out is None else [scope, left_out]
    found = memory_top_k(
        stats.kept,
        terms,
        [idf(stats.documents, stats.df[t]) for t in terms],
        informative,
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
                pairs = [(r, g) for r, g, _b in covered]
                for term, count in sum_document_frequencies(cursor, pairs, terms).items():
                    stats.df[term] += count
        found_pairs = {(r, g) for r, g, _b in covered}
        missing = [r for r in repositories if (r.id, r.generation) not in found_pairs]
        counted = None
        if missing:
            cursor = stack.enter_context(connection.cursor())
            counted = count_on_the_fly(cursor, missing, terms)
        if counted is not None:  # (search.retrieval.fulltext_fallback)
            stats.documents += counted[0]
            stats.total_length += counted[1]
            stats.computed_on_the_fly.extend(dict.fromkeys(r.id for r in missing))
            for term, count in counted[2].items():
                stats.df[term] += count
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
