"""The search executor: expand -> retrieve -> fuse -> rerank -> blend -> scope -> limit.

One plain object called by the API view, ``manage.py search``, the evaluation harness and the
MCP tool alike::

    from search.executor import SearchExecutor, SearchRequest

    result = SearchExecutor().run(SearchRequest(query="where is the pool configured", limit=5))
    for hit in result.hits:
        print(hit.file_path, hit.start_line, hit.combined_score)
    for stage in result.trace:
        print(stage.name, stage.status, stage.reason, stage.ms)

Every stage reports ``ran`` / ``skipped`` (with the reason) / ``failed`` and its milliseconds
in ``SearchResult.trace``; a stage that cannot run (no chat model, no vectors for the current
embedding model) never fails the search -- full-text search alone answers when only PostgreSQL
is up. Scope filters (repositories, languages, paths, tests/docs) are pushed down into every
retrieval query so that each ranked list is already in scope.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from search.ranking.cross_encoder import cross_encoder_on, cross_encoder_stage
from search.ranking.fusion import (
    FusedCandidate,
    RankedList,
    blend,
    fuse_ranked_lists,
    place_left_out,
)
from search.ranking.ordering import apply_signals, learned_order, question_shape
from search.ranking.ordering import enabled as learned_on
from search.ranking.rerank import rerank_stage
from search.retrieval.db import connection, run_beside
from search.retrieval.expansion import expansion_stage
from search.retrieval.fulltext import fulltext_search
from search.retrieval.hydrate import ChunkFacts, chunk_facts, hydrate_hits
from search.retrieval.query import identifier_query, parse_query
from search.retrieval.replicas import lost_database, read_with_fallback
from search.retrieval.scope import (
    LIVE_CHUNKS_SQL,
    ScopeFilter,
    build_left_out_filter,
    build_scope_filter,
    resolve_scope,
    scope_repositories,
)
from search.retrieval.vector_stage import QueryMemoEmbedder, run_vector_stage
from search.types import (
    ScopeApplied,
    SearchHit,
    SearchRequest,
    SearchResult,
    StageTrace,
    record_stage,
    skip_stage,
)

__all__ = [
    "ScopeApplied",
    "SearchExecutor",
    "SearchHit",
    "SearchRequest",
    "SearchResult",
    "StageTrace",
]

logger = logging.getLogger(__name__)


class SearchExecutor:
    """Runs a ``SearchRequest``. ``embedder`` / ``chat`` default to the model layer's current
    ones (``llm.get_embedder()`` / ``llm.get_chat()``), looked up per run.

    Only repositories ``request.viewer`` may see are searched (``scope_repositories``).
    Raises ``search.retrieval.scope.UnknownRepositories`` for repository ids that do not exist
    (or are not visible) and
    ``search.retrieval.scope.InvalidGlob`` for unusable path globs; every other problem ends up in the
    trace of the stage it happened in.
    """

    def __init__(self, *, embedder: Any = None, chat: Any = None, timeout_ms: int = 5000) -> None:
        self._embedder = embedder
        self._chat = chat
        self.timeout_ms = timeout_ms

    def _get_chat(self) -> Any:
        if self._chat is None:
            from llm import get_chat

            return get_chat()
        return self._chat

    def _get_embedder(self) -> Any:
        if self._embedder is None:
            from llm import get_embedder

            return get_embedder()
        return self._embedder

    def run(self, request: SearchRequest) -> SearchResult:
        started = time.perf_counter()
        trace: list[StageTrace] = []
        # Bad input (unknown repositories, unusable globs) raises: it is the caller's error.
        scope_started = time.perf_counter()
        scope = resolve_scope(request)
        scope_filter = build_scope_filter(
            scope,
            scope_repositories(request.repo_ids, request.viewer, request.branches),
            request.exclude_path_globs,
            request.exclude_languages,
        )
        scope_stage = StageTrace(
            name="scope",
            status="ran",
            ms=round((time.perf_counter() - scope_started) * 1000, 1),
            detail={
                "repositories": len(scope_filter.repositories),
                "include_tests": scope.include_tests,
                "tests": scope.tests_reason,
                "include_docs": scope.include_docs,
                "docs": scope.docs_reason,
                "prefer_tests": scope.prefer_tests,
                "prefer_docs": scope.prefer_docs,
            },
        )
        trace.append(scope_stage)
        # The rest reads from a replica that has replayed what the scope needs, or the
        # primary; a replica failing meanwhile sends the search to the next database.
        result, route = read_with_fallback(
            scope_filter.repositories,
            lambda: self._answer(request, scope, scope_filter, list(trace), started),
            lambda answer: lost_database(answer.trace),
        )
        result.served_by = route.served_by()
        if route.replica or route.skipped:  # replicas: the pipeline says where it was read
            scope_stage.detail["read_from"] = result.served_by["database"]
        return result

    def _answer(
        self,
        request: SearchRequest,
        scope: ScopeApplied,
        scope_filter: ScopeFilter,
        trace: list[StageTrace],
        started: float,
    ) -> SearchResult:
        """Everything after the scope: expand, retrieve, fuse, rerank, blend, cut."""
        queries = [request.query]
        if request.use_expansion:  # the chat model's other phrasings (search.retrieval.expansion)
            queries = expansion_stage(self._get_chat, request, trace)
        else:
            skip_stage(trace, "expansion", "not requested")
        lists: list[RankedList] = []
        totals = {"fulltext": 0, "vector": 0}
        left_out_filter = None
        if request.tuning.left_out_weight > 0:
            left_out_filter = build_left_out_filter(
                scope, scope_filter.repositories, request.exclude_path_globs,
                request.exclude_languages,
            )  # fmt: skip
        left_out_lists: list[RankedList] = []
        known: dict[int, ChunkFacts] = {}  # facts the full-text lists read on the way
        self._retrieve(
            request, queries, scope, scope_filter, lists, trace, left_out_filter, left_out_lists,
            known,
        )  # fmt: skip
        for method in totals:
            totals[method] = len(
                {cid for rl in lists if rl.method == method for cid, _ in rl.ranked}
            )
        full = {
            method: any(
                len(rl.ranked) >= request.tuning.list_depth for rl in lists if rl.method == method
            )
            for method in totals
        }

        candidates: list[FusedCandidate] = []
        with record_stage(trace, "fusion") as stage:
            fused = fuse_ranked_lists(
                lists,
                k=request.tuning.rrf_k,
                original_weight=request.tuning.original_weight,
                first_rank_bonus=request.tuning.first_rank_bonus,
                top=None,
            )
            fused, left_out_added = place_left_out(
                fused,
                lists,
                left_out_lists,
                weight=request.tuning.left_out_weight,
                depth=request.tuning.list_depth,
                k=request.tuning.rrf_k,
                original_weight=request.tuning.original_weight,
                first_rank_bonus=request.tuning.first_rank_bonus,
            )
            facts = chunk_facts([c.chunk_id for c in fused], scope_filter.live_sql, known)
            learned = learned_on(request.tuning.learned_fusion)
            candidates, touched = apply_signals(
                fused,
                facts,
                prefer_tests=scope.prefer_tests,
                prefer_docs=scope.prefer_docs,
                intent_boost=request.tuning.intent_boost,
                identifier=identifier_query(request.query),
                exact_symbol_boost=request.tuning.exact_symbol_boost,
                top=len(fused) if learned else request.tuning.fusion_top,
            )
            if learned:  # search.ranking.ordering: a trained model orders the same pool
                shape = question_shape(request.query, scope)
                pool = [*lists, *left_out_lists]
                candidates = learned_order(
                    candidates, pool, facts, shape, top=request.tuning.fusion_top
                )
                touched["learned_order"] = len(candidates)
            stage.set("ran", lists=len(lists), candidates=len(candidates), signals=touched)
            if left_out_filter is not None:
                stage.set("ran", left_out={"lists": len(left_out_lists), "added": left_out_added})
            if not lists:
                stage.set("skipped", "no retrieval list to fuse")
        hits = self._hydrate(request, candidates, scope_filter)
        candidates = [c for c in candidates if c.chunk_id in hits]
        if cross_encoder_on(request):  # the local model reorders the best few
            candidates = cross_encoder_stage(request, candidates, hits, trace)
        else:
            skip_stage(trace, "cross_encoder", "not requested")
        rerank_scores: dict[int, float] = {}
        if request.use_rerank:  # the chat model judges the best ones (search.ranking.rerank)
            rerank_scores = rerank_stage(self._get_chat, request, candidates, hits, trace)
        else:
            skip_stage(trace, "rerank", "not requested")
        with record_stage(trace, "blend") as stage:
            if rerank_scores:
                ordered = blend(
                    candidates,
                    rerank_scores,
                    top3=request.tuning.blend_top3,
                    top10=request.tuning.blend_top10,
                    rest=request.tuning.blend_rest,
                )
                stage.set("ran", blended=len(rerank_scores))
            else:
                ordered = [(c, c.score) for c in candidates]
                stage.set("skipped", "no rerank scores; the fusion order stands")
        results: list[SearchHit] = []
        for candidate, score in ordered[: max(0, request.limit)]:
            hit = hits[candidate.chunk_id]
            hit.bm25_score = candidate.method_scores.get("fulltext")
            hit.vector_score = candidate.method_scores.get("vector")
            hit.fusion_score = candidate.score
            hit.fusion_rank = candidate.rank
            hit.rerank_score = rerank_scores.get(candidate.chunk_id)
            hit.combined_score = score
            results.append(hit)
        return SearchResult(
            hits=results,
            trace=trace,
            total_bm25_hits=totals["fulltext"],
            total_vector_hits=totals["vector"],
            bm25_hits_is_lower_bound=full["fulltext"],
            vector_hits_is_lower_bound=full["vector"],
            queries=queries,
            scope=scope,
            ms=round((time.perf_counter() - started) * 1000, 1),
        )

    @staticmethod
    def _hydrate(
        request: SearchRequest, candidates: list[FusedCandidate], scope_filter: ScopeFilter
    ) -> dict[int, SearchHit]:
        """The hits of the candidates the answer can show: all when the rerank reads them, else
        the first ``limit`` (or cross-encoder ``top``) still live (more statements only when
        some were swapped out meanwhile)."""
        if request.use_rerank:
            return hydrate_hits(candidates, scope_filter)
        hits: dict[int, SearchHit] = {}
        read = 0
        wanted = request.limit
        if cross_encoder_on(request):  # the cross-encoder reads the best ones' text
            wanted = max(wanted, request.tuning.cross_encoder_top)
        while read < len(candidates) and len(hits) < wanted:
            batch = candidates[read : read + wanted - len(hits)]
            read += len(batch)
            hits.update(hydrate_hits(batch, scope_filter))
        return hits

    def _retrieve(
        self,
        request: SearchRequest,
        queries: list[str],
        scope: ScopeApplied,
        scope_filter: ScopeFilter,
        lists: list[RankedList],
        trace: list[StageTrace],
        left_out_filter: ScopeFilter | None = None,
        left_out_lists: list[RankedList] | None = None,
        known: dict[int, ChunkFacts] | None = None,
    ) -> None:
        """Full-text and vector lists; the vector lists are built on a second database connection
        at the same time when that can see the same data (no open transaction here). With a
        ``left_out_filter``, each method also lists those chunks into ``left_out_lists``."""
        vector_lists: list[RankedList] = []
        vector_trace: list[StageTrace] = []
        extra_fulltext: list[RankedList] = []
        extra_vector: list[RankedList] = []
        embedder = QueryMemoEmbedder(self._get_embedder) if left_out_filter else None

        def scoped_vector() -> None:
            self._vector(
                request, queries, scope, scope_filter, vector_lists, vector_trace, embedder
            )

        def left_out_vector() -> None:
            if left_out_filter is not None:
                self._vector(request, queries, scope, left_out_filter, extra_vector, [], embedder)

        concurrent = request.use_bm25 and request.use_vector and not connection.in_atomic_block
        # The left-out vector list runs on a connection of its own too; the left-out full-text
        # list comes from the same reading of the term postings as the scoped one.
        vectors = [scoped_vector] + ([left_out_vector] if left_out_filter is not None else [])
        beside = [run_beside(f) for f in vectors] if concurrent else []
        self._fulltext(request, queries, scope_filter, lists, trace, left_out_filter,
                       extra_fulltext, known)  # fmt: skip
        for future in beside:
            future.result()
        if not concurrent:
            scoped_vector()
            left_out_vector()
        if left_out_lists is not None:
            left_out_lists.extend([*extra_fulltext, *extra_vector])
        for stage in vector_trace:
            stage.detail["concurrent_with_fulltext"] = concurrent
        lists.extend(vector_lists)
        trace.extend(vector_trace)

    def _fulltext(
        self,
        request: SearchRequest,
        queries: list[str],
        scope_filter: ScopeFilter,
        lists: list[RankedList],
        trace: list[StageTrace],
        left_out_filter: ScopeFilter | None = None,
        left_out_lists: list[RankedList] | None = None,
        known: dict[int, ChunkFacts] | None = None,
    ) -> None:
        with record_stage(trace, "fulltext") as stage:
            if not request.use_bm25:
                stage.set("skipped", "not requested")
                return
            per_query = []
            for index, query in enumerate(queries):
                found = fulltext_search(
                    parse_query(query),
                    scope_filter,
                    limit=request.tuning.list_depth,
                    cap=request.tuning.fulltext_candidates,
                    all_terms_boost=request.tuning.all_terms_boost,
                    timeout_ms=self.timeout_ms,
                    left_out=left_out_filter,
                )
                lists.append(RankedList("fulltext", index, found.ranked))
                if known is not None and scope_filter.live_sql == LIVE_CHUNKS_SQL:
                    known.update(found.facts)  # read under the same live-chunks join
                if found.left_out is not None and left_out_lists is not None:
                    left_out_lists.append(RankedList("fulltext", index, found.left_out.ranked))
                per_query.append({"query": query, "hits": len(found.ranked), **found.detail})
            stage.set("ran", ranking="bm25", queries=per_query)

    def _vector(
        self,
        request: SearchRequest,
        queries: list[str],
        scope: ScopeApplied,
        scope_filter: ScopeFilter,
        lists: list[RankedList],
        trace: list[StageTrace],
        embedder: QueryMemoEmbedder | None = None,
    ) -> None:
        with record_stage(trace, "vector") as stage:
            if not request.use_vector:
                stage.set("skipped", "not requested")
                return
            run_vector_stage(
                stage,
                embedder.get if embedder is not None else self._get_embedder,
                request,
                queries,
                scope,
                scope_filter,
                lists,
                self.timeout_ms,
            )
