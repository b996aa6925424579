"""The vector stage of a search: one ranked list per query and per embedding space in use.

Each repository is searched in the current embedding model's space, unless that model's vectors
for it are not there yet (never computed, or a re-embed job still running): then the newest
earlier space that has its vectors keeps serving it, with the query embedded by that space's own
model. Lists of different spaces are never compared, only fused by rank (RRF).

The plan (``plan_vector_search``), in one statement: the current embedding space (by key), which
repositories in scope it serves (those with at least one vector in it and no re-embed job
running), and how many rows the repository / language / test / doc filters keep among those
(``ChunkFacetStat``; a repository without statistics for its live generation counts in full;
path globs cannot be estimated).

**Query vectors** (``embed_queries``): a search embeds each query text (and each expansion)
before the vector lookup: 10-20 ms of model time on a CPU. The same text in the same embedding
space always gives the same vector, so this process keeps them for repeated queries (paging, the
web page's re-runs, a team asking the same thing): a bounded LRU keyed by (space key, text),
``QUERY_VECTOR_CACHE_SIZE`` entries (384 floats each, ~2 KB). Within one run,
``QueryMemoEmbedder`` embeds each list of texts once even when the scoped and the left-out vector
lists ask for it at the same time.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from indexing.models import FINISHED_JOB_STATES, EmbeddingSpace, JobKind
from search.lru import Lru
from search.retrieval.db import connection
from search.retrieval.scope import ScopeApplied, ScopeFilter
from search.retrieval.vector import estimate_rows, previous_spaces, vector_search
from search.types import RankedList, SearchRequest, StageRecorder

QUERY_VECTOR_CACHE_SIZE = 2048

_query_vectors: Lru[tuple[str, str], np.ndarray] = Lru(QUERY_VECTOR_CACHE_SIZE)
_lock = threading.Lock()
query_vector_stats = {"hits": 0, "misses": 0}


def embed_queries(embedder: Any, queries: list[str]) -> np.ndarray:
    """``embedder.embed_queries(queries)``, with each text embedded at most once per process while it
    stays among the most recently used."""
    space = str(getattr(embedder, "space_key", ""))
    found = {text: vector for (_space, text), vector in
             _query_vectors.get_many((space, text) for text in queries).items()}  # fmt: skip
    missing = list(dict.fromkeys(q for q in queries if q not in found))
    with _lock:
        query_vector_stats["hits"] += len(queries) - len(missing)
        query_vector_stats["misses"] += len(missing)
    if missing:
        vectors = np.asarray(embedder.embed_queries(missing))
        for text, vector in zip(missing, vectors, strict=True):
            kept = np.array(vector, copy=True)
            kept.setflags(write=False)
            found[text] = kept
        _query_vectors.put_many({(space, text): found[text] for text in missing})
    return np.stack([found[text] for text in queries])


def clear_query_vectors() -> None:
    _query_vectors.clear()
    with _lock:
        query_vector_stats.update(hits=0, misses=0)


class QueryMemoEmbedder:
    """The run's embedder, embedding each list of query texts once: the left-out lists search
    with the same query vectors as the scoped ones."""

    def __init__(self, get_embedder: Callable[[], Any]) -> None:
        self._get_embedder = get_embedder
        self._embedder: Any = None
        self._lock = threading.Lock()

    def get(self) -> Any:
        with self._lock:
            if self._embedder is None:
                self._embedder = _Memo(self._get_embedder())
            return self._embedder


class _Memo:
    def __init__(self, embedder: Any) -> None:
        self._embedder = embedder
        self._vectors: dict[tuple[str, ...], Any] = {}
        self._lock = threading.Lock()  # the two vector lists may ask at the same time

    def embed_queries(self, texts: Sequence[str]) -> Any:
        key = tuple(texts)
        with self._lock:
            if key not in self._vectors:
                self._vectors[key] = self._embedder.embed_queries(list(texts))
            return self._vectors[key]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._embedder, name)


_SQL = """
WITH space AS (
    SELECT id, key, provider, model, dim, created_at FROM indexing_embeddingspace WHERE key = %s
), scope AS (
    SELECT * FROM unnest(%s::uuid[], %s::int[], %s::int[])
        WITH ORDINALITY AS g(id, generation, chunks, position)
), served AS (
    SELECT g.* FROM scope g, space s
    -- A scalar subquery, one probe of the (space, repository) B-tree per repository: as EXISTS
    -- the planner made it a semi-join aggregating the whole index (60 ms at 157 k chunks).
    WHERE (SELECT true FROM indexing_chunkembedding e
           WHERE e.space_id = s.id AND e.repository_id = g.id LIMIT 1)
      AND NOT EXISTS (SELECT 1 FROM indexing_indexjob j
                      WHERE j.repository_id = g.id AND j.kind = %s AND NOT (j.state = ANY(%s)))
), facets AS (
    SELECT f.repository_id, coalesce(sum(f.chunks) FILTER (
        WHERE (%s OR NOT f.is_test) AND (%s OR NOT f.is_doc)
          AND (%s OR lower(f.language) = ANY(%s))), 0) AS kept
    FROM search_chunkfacetstat f
    JOIN served g ON f.repository_id = g.id AND f.generation = g.generation
    GROUP BY f.repository_id
)
SELECT s.id, s.key, s.provider, s.model, s.dim, s.created_at,
    coalesce((SELECT array_agg(g.id ORDER BY g.position) FROM served g), '{}'),
    (SELECT coalesce(sum(coalesce(f.kept, g.chunks)), 0)
     FROM served g LEFT JOIN facets f ON f.repository_id = g.id)
FROM space s
"""


@dataclass
class VectorPlan:
    space: EmbeddingSpace | None
    served: list[Any] = field(default_factory=list)  # repository ids, in scope order
    estimated_rows: int = 0


def plan_vector_search(
    space_key: str, scope: ScopeFilter, languages: list[str] | None, tests: bool, docs: bool
) -> VectorPlan:
    """The space of ``space_key`` (None if no vector was ever stored in it), the repositories
    in ``scope`` it serves, and the rows the filters keep among those."""
    repositories = scope.repositories
    with connection.cursor() as cursor:
        cursor.execute(
            _SQL,
            [
                space_key,
                [r.id for r in repositories],
                [r.generation for r in repositories],
                [r.chunks for r in repositories],
                JobKind.REEMBED.value,
                [str(state) for state in FINISHED_JOB_STATES],
                tests,
                docs,
                not languages,
                [language.lower() for language in languages or []],
            ],
        )
        row = cursor.fetchone()
    if row is None:
        return VectorPlan(space=None)
    space = EmbeddingSpace(
        pk=row[0], key=row[1], provider=row[2], model=row[3], dim=row[4], created_at=row[5]
    )
    return VectorPlan(space=space, served=list(row[6]), estimated_rows=int(row[7]))


def _narrow(scope: ScopeFilter, repository_ids: list[Any]) -> ScopeFilter:
    keep = set(repository_ids)  # a set: at 90 repositories a list made this 8,100 UUID compares
    return replace(scope, repositories=[r for r in scope.repositories if r.id in keep])


def _estimate_flags(scope: ScopeApplied, scope_filter: ScopeFilter) -> tuple[bool, bool]:
    """Tests and docs as the row estimate counts them: a left-out list (``only_kinds``) is
    estimated as the scope plus those kinds, the scope its HNSW path searches
    (``search.retrieval.vector``)."""
    kinds = scope_filter.only_kinds
    return scope.include_tests or "tests" in kinds, scope.include_docs or "docs" in kinds


def _search_space(
    embedder: Any,
    space: EmbeddingSpace,
    space_scope: ScopeFilter,
    request: SearchRequest,
    queries: list[str],
    scope: ScopeApplied,
    lists: list[RankedList],
    timeout_ms: int,
    estimated: int | None = None,
) -> list[dict[str, Any]]:
    vectors = embed_queries(embedder, list(queries))
    if estimated is None:
        estimated = estimate_rows(
            space_scope, scope.languages, *_estimate_flags(scope, space_scope)
        )
    per_query = []
    for index, (query, vector) in enumerate(zip(queries, vectors, strict=True)):
        found = vector_search(
            query,
            vector,
            space,
            space_scope,
            limit=request.tuning.list_depth,
            estimated_rows=estimated,
            exact_max_rows=request.tuning.exact_scan_max_rows,
            ef_search=request.tuning.hnsw_ef_search,
            timeout_ms=timeout_ms,
        )
        lists.append(RankedList("vector", index, found.ranked))
        per_query.append({"query": query, "hits": len(found.ranked), **found.detail})
    return per_query


def run_vector_stage(
    stage: StageRecorder,
    get_embedder: Callable[[], Any],
    request: SearchRequest,
    queries: list[str],
    scope: ScopeApplied,
    scope_filter: ScopeFilter,
    lists: list[RankedList],
    timeout_ms: int,
) -> None:
    from llm import ModelError, get_embedder_for_space

    problems: list[str] = []
    space_key = ""
    current: EmbeddingSpace | None = None
    embedder: Any = None
    served: list[Any] = []
    estimated: int | None = None
    try:
        embedder = get_embedder()
        space_key = embedder.space_key
        # One statement for the space, the repositories it serves and the rows the filters
        # keep: the same at any number of repositories.
        found = plan_vector_search(
            space_key, scope_filter, scope.languages, *_estimate_flags(scope, scope_filter)
        )
        current, served, estimated = found.space, found.served, found.estimated_rows
    except ModelError as exc:
        problems.append(f"no embedding model: {exc}")
    ids = list(scope_filter.repository_ids)
    plan: list[tuple[Any, EmbeddingSpace, list[Any]]] = []
    if current is not None and served and embedder is not None:
        plan.append((embedder, current, served))
    served_ids = set(served)
    rest = [r for r in ids if r not in served_ids]
    fallbacks: dict[str, list[str]] = {}
    if rest:
        for space, repositories in previous_spaces(current, _narrow(scope_filter, rest)):
            try:
                earlier = get_embedder_for_space(space.provider, space.model, space.dim, space.key)
            except ModelError as exc:
                problems.append(f"earlier model {space.key} unavailable: {exc}")
                continue
            plan.append((earlier, space, repositories))
            fallbacks[space.key] = [str(r) for r in repositories]
    if not plan:
        reason = "; ".join(problems) or f"no vectors for this embedding model yet ({space_key})"
        stage.set("skipped", reason)
        return
    details: dict[str, Any] = {}
    for space_embedder, space, repositories in plan:
        try:
            details[space.key] = _search_space(
                space_embedder,
                space,
                _narrow(scope_filter, repositories),
                request,
                queries,
                scope,
                lists,
                timeout_ms,
                estimated if space is current else None,
            )
        except ModelError as exc:
            problems.append(f"{space.key}: embedding model unavailable: {exc}")
    if not details:
        stage.set("skipped", "; ".join(problems))
        return
    covered = {r for _, _, repositories in plan for r in repositories}
    missing = [str(r) for r in ids if r not in covered]
    shown = details.get(space_key) or next(iter(details.values()))
    stage.set("ran", space=space_key, queries=shown, spaces=details)
    if fallbacks:
        stage.set(
            "ran",
            "the current model's vectors are not complete for some repositories; "
            "their earlier model's vectors answer meanwhile",
            previous_spaces=fallbacks,
        )
    if missing:
        stage.set("ran", "some repositories have no vectors yet", without_vectors=missing)
