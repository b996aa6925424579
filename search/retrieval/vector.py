"""Vector retrieval: pgvector cosine distance in the current embedding space, filters kept.

Each embedding space has a partial HNSW index over ``vector::vector(dim)`` (``WHERE space_id``),
so queries write ``e.vector::vector(dim) <=> %s::vector(dim)`` and filter ``space_id``.

An HNSW scan with a selective filter returns too few rows, and with iterative scans it returns
k rows but poor recall when the kept rows sit far from the query in the graph (measured on
clustered vectors: recall 0.3 for a 10 % repository filter). So the strategy follows the
number of rows the filters keep, estimated from ``ChunkFacetStat`` (repositories, languages,
tests/docs; path globs cannot be estimated and count as no reduction):

* at most ``exact_max_rows`` rows: an exact scan -- the rows come through the B-tree indexes
  on (space, repository) and chunk, the distance is computed for each (``+ 0`` on the ORDER
  BY keeps the planner off the HNSW index); recall 1.0;
* more: HNSW with ``hnsw.iterative_scan = relaxed_order`` and a raised ``hnsw.ef_search``,
  re-sorted by distance; if that still yields fewer than k rows (a selective path glob, say),
  the exact scan runs instead.

The left-out lists (``ScopeFilter.only_kinds``: only the tests and docs the scope left out by
default, ``search.ranking.fusion.place_left_out``) are such a selective filter -- a few per cent of the
chunks, whose vectors sit away from most queries: at 1 M chunks the filtered HNSW scan visited
~15,000 vectors to keep 2-8 of them (0.45-2 s per statement; ~380 ms of database CPU per search
on average). On the HNSW path they take the k nearest chunks of the wider scope
(the scope plus those kinds) and keep the left-out ones. That is every left-out chunk that can
count: one earns nothing past virtual rank k (its place among the left-out chunks plus the
in-scope chunks scoring at least as well), and any such chunk is among the wider scope's k
nearest (ties in distance go to the in-scope chunk in the virtual rank, so never against it).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np
from django.db import transaction

from indexing.models import EmbeddingSpace
from search.models import ChunkFacetStat
from search.retrieval.db import array_literal, connection, read_alias, search_cursor
from search.retrieval.scope import ScopeFilter

Strategy = Literal["exact", "hnsw"]
# How many index tuples an iterative HNSW scan may visit before it gives up (pgvector's
# default is 20 000); a selective filter past this falls back to the exact scan.
HNSW_MAX_SCAN_TUPLES = 20_000


@dataclass
class VectorList:
    query: str
    ranked: list[tuple[int, float]]  # (chunk id, cosine similarity), best first
    detail: dict[str, Any] = field(default_factory=dict)


def find_space(space_key: str) -> EmbeddingSpace | None:
    """The space of ``space_key`` if any vector was ever stored in it (never creates one)."""
    return EmbeddingSpace.objects.filter(key=space_key).first()


def repositories_with_vectors(space: EmbeddingSpace, scope: ScopeFilter) -> list[Any]:
    """Ids of the repositories in scope that have at least one vector in ``space``."""
    ids = list(scope.repository_ids)
    if not ids:
        return []
    with search_cursor() as cursor:
        # One round trip; each EXISTS is a probe of the (space, repository) B-tree.
        cursor.execute(
            "SELECT r.id FROM unnest(%s::uuid[]) WITH ORDINALITY AS r(id, position)"
            " WHERE EXISTS (SELECT 1 FROM indexing_chunkembedding e"
            " WHERE e.space_id = %s AND e.repository_id = r.id) ORDER BY r.position",
            [ids, space.pk],
        )
        found = {row[0] for row in cursor.fetchall()}
    return [repository_id for repository_id in ids if repository_id in found]


def previous_spaces(
    current: EmbeddingSpace | None, scope: ScopeFilter
) -> list[tuple[EmbeddingSpace, list[Any]]]:
    """Earlier spaces (newest first) with vectors for the repositories in ``scope``; each
    repository is served by the newest earlier space that has vectors for it."""
    left = list(scope.repository_ids)
    found: list[tuple[EmbeddingSpace, list[Any]]] = []
    earlier = EmbeddingSpace.objects.order_by("-created_at", "-pk")
    if current is not None:
        earlier = earlier.exclude(pk=current.pk)
    for space in earlier:
        if not left:
            break
        keep = set(left)
        narrowed = replace(scope, repositories=[r for r in scope.repositories if r.id in keep])
        served = repositories_with_vectors(space, narrowed)
        if served:
            found.append((space, served))
            left = [r for r in left if r not in served]
    return found


def estimate_rows(scope: ScopeFilter, languages: list[str] | None, tests: bool, docs: bool) -> int:
    """Rows the repository/language/test/doc filters keep (facet statistics; repositories
    without statistics count in full)."""
    facets = ChunkFacetStat.objects.filter(repository_id__in=scope.repository_ids)
    generation_of = {r.id: r.generation for r in scope.repositories}
    covered: set[Any] = set()
    total = 0
    for facet in facets:
        if generation_of.get(facet.repository_id) != facet.generation:
            continue
        covered.add(facet.repository_id)
        if (facet.is_test and not tests) or (facet.is_doc and not docs):
            continue
        if languages and facet.language.lower() not in languages:
            continue
        total += facet.chunks
    total += sum(r.chunks for r in scope.repositories if r.id not in covered)
    return total


def vector_literal(vector: np.ndarray) -> str:
    return "[" + ",".join(f"{float(x):.7g}" for x in vector) + "]"


def _scoped_chunks(scope: ScopeFilter, join: str = "") -> str:
    """FROM/JOIN/WHERE of the live chunks in scope pointing at vectors of the space (alias e/c)."""
    return f"""
        FROM indexing_chunkembedding e {join}
        JOIN indexing_chunk c ON c.id = e.chunk_id
        {scope.live_sql}
        WHERE e.space_id = %s AND r.id = ANY(%s::uuid[]) AND {scope.sql}"""


def _sql(dim: int, strategy: Strategy, scope: ScopeFilter) -> str:
    distance = f"(v.vector::vector({dim}) <=> %s::vector({dim}))"
    if strategy == "exact":
        # "+ 0": an expression the HNSW index does not provide, so the exact plan cannot use it.
        return f"""
            SELECT c.id, {distance} AS distance, c.is_test, c.is_doc
            {_scoped_chunks(scope, "JOIN indexing_embeddingvector v ON v.id = e.embedding_vector_id")}
            AND e.repository_id = ANY(%s::uuid[])
            ORDER BY {distance} + 0, c.id
            LIMIT %s
        """
    # The nearest distinct vectors that some chunk in scope points at (the HNSW index holds
    # each text once), then every chunk in scope with those vectors, nearest first. The scope
    # test is a scalar subquery, not EXISTS: the planner cannot turn it into a semi-join that
    # first materialises every chunk in scope; it runs per candidate, three index probes.
    return f"""
        WITH nearest AS MATERIALIZED (
            SELECT v.id, {distance} AS distance
            FROM indexing_embeddingvector v
            WHERE v.space_id = %s AND (
                SELECT true {_scoped_chunks(scope)} AND e.embedding_vector_id = v.id LIMIT 1)
            ORDER BY {distance}
            LIMIT %s
        )
        SELECT c.id, n.distance, c.is_test, c.is_doc
        FROM nearest n
        JOIN indexing_chunkembedding e ON e.embedding_vector_id = n.id
        JOIN indexing_chunk c ON c.id = e.chunk_id
        {scope.live_sql}
        WHERE e.space_id = %s AND r.id = ANY(%s::uuid[]) AND {scope.sql}
        ORDER BY n.distance, c.id
        LIMIT %s
    """  # noqa: S608


def _params(
    literal: str, space_id: int, scope: ScopeFilter, strategy: Strategy, limit: int
) -> list[Any]:
    """The placeholders of ``_sql`` in text order."""
    # (the ids as one array literal: psycopg adapts a list one element at a time)
    repositories = array_literal(scope.repository_ids)
    chunks = [space_id, repositories, *scope.params]
    if strategy == "exact":
        return [literal, *chunks, repositories, literal, limit]
    return [literal, space_id, *chunks, literal, limit, *chunks, limit]


@contextmanager
def _vector_cursor(timeout_ms: int, settings: dict[str, str | int]) -> Iterator[Any]:
    """A cursor in a transaction with ``statement_timeout`` and ``settings`` set locally, in one
    statement (``search_cursor`` spends one round trip per setting)."""
    names = ["statement_timeout", *(name.replace("__", ".") for name in settings)]
    values = [str(int(timeout_ms)), *(str(value) for value in settings.values())]
    calls = ", ".join("set_config(%s, %s, true)" for _ in names)
    with transaction.atomic(using=read_alias()), connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {calls}", [x for pair in zip(names, values, strict=True) for x in pair]
        )
        yield cursor


Row = tuple[int, float, bool, bool]  # chunk id, cosine distance, is_test, is_doc


def _run(
    literal: str,
    space: EmbeddingSpace,
    scope: ScopeFilter,
    strategy: Strategy,
    limit: int,
    ef_search: int,
    timeout_ms: int,
) -> list[Row]:
    settings: dict[str, str | int] = {}
    if strategy == "hnsw":
        # The planner misjudges how many rows the live-generation join keeps and may pick
        # the exact plan for a large scope (seconds at a million rows): without sorts, the
        # ordered HNSW scan is the only plan left for the nearest vectors.
        settings = {
            "hnsw__iterative_scan": "relaxed_order",
            "hnsw__ef_search": max(ef_search, limit),
            "hnsw__max_scan_tuples": HNSW_MAX_SCAN_TUPLES,
            "enable_sort": "off",
        }
    with _vector_cursor(timeout_ms, settings) as cursor:
        cursor.execute(
            _sql(space.dim, strategy, scope), _params(literal, space.pk, scope, strategy, limit)
        )
        rows = cursor.fetchall()
    # relaxed_order may return vectors slightly out of order.
    rows.sort(key=lambda row: (row[1], row[0]))
    return [(int(cid), float(distance), test, doc) for cid, distance, test, doc in rows]


def _ranked(rows: list[Row], kinds: frozenset[str] = frozenset()) -> list[tuple[int, float]]:
    """(chunk id, cosine similarity), best first; with ``kinds``, only chunks of those kinds."""
    tests, docs = "tests" in kinds, "docs" in kinds
    return [
        (cid, 1.0 - distance)
        for cid, distance, test, doc in rows
        if not kinds or (tests and test) or (docs and doc)
    ]


def vector_search(
    query: str,
    vector: np.ndarray,
    space: EmbeddingSpace,
    scope: ScopeFilter,
    *,
    limit: int,
    estimated_rows: int,
    exact_max_rows: int = 30_000,
    ef_search: int = 200,
    timeout_ms: int = 5000,
    force: Strategy | None = None,
) -> VectorList:
    """The ``limit`` nearest chunks to ``vector`` in scope, by cosine similarity."""
    literal = vector_literal(vector)
    strategy: Strategy = force or ("exact" if estimated_rows <= exact_max_rows else "hnsw")
    started = time.perf_counter()
    detail: dict[str, Any] = {"strategy": strategy, "estimated_rows": estimated_rows}
    searched = scope
    if strategy == "hnsw" and scope.only_kinds and scope.wide_sql:
        # The left-out kinds alone are too selective for HNSW (module docstring).
        searched = replace(scope, sql=scope.wide_sql, only_kinds=frozenset(), wide_sql="")
        detail["kinds_kept_after"] = sorted(scope.only_kinds)
    rows = _run(literal, space, searched, strategy, limit, ef_search, timeout_ms)
    ranked = _ranked(rows, scope.only_kinds if searched is not scope else frozenset())
    if strategy == "hnsw" and len(rows) < limit and force is None:
        detail["strategy"] = "exact (hnsw returned too few rows)"
        detail["hnsw_rows"] = len(rows)
        detail.pop("kinds_kept_after", None)
        ranked = _ranked(_run(literal, space, scope, "exact", limit, ef_search, timeout_ms))
    detail["ms"] = round((time.perf_counter() - started) * 1000, 1)
    return VectorList(query=query, ranked=ranked, detail=detail)
