"""Vector search: filtered recall against exact search, real local embeddings, skipped stages."""

from __future__ import annotations

import time

import numpy as np
import pytest
from django.db import connection

from accounts.visibility import Viewer
from indexing.models import EmbeddingSpace, Repository, SourceFile
from indexing.services.search_stats import refresh_search_stats
from indexing.services.vectors import (
    embed_repository,
    embedding_space,
    space_for,
    store_vectors,
)
from search.executor import SearchExecutor, SearchRequest
from search.ranking.fusion import RankedList, fuse_ranked_lists, place_left_out
from search.retrieval.scope import (
    build_left_out_filter,
    build_scope_filter,
    resolve_scope,
    scope_repositories,
)
from search.retrieval.vector import estimate_rows, vector_search
from tests.search.corpus import Piece, SourceDoc, indexed_repository, local_embedder, no_chat

pytestmark = pytest.mark.django_db

DIM = 32
K = 10


def _synthetic_repository(name: str, count: int) -> tuple[Repository, list[int]]:
    repository = Repository.objects.create(url=f"https://example.com/{name}.git", name=name)
    source = SourceFile.objects.create(
        repository=repository, generation=1, path="a.py", blob_sha="0"
    )
    with connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO indexing_chunk (repository_id, file_id, generation, "index", start_line,
                end_line, symbol, symbol_name, kind, language, path, is_test, is_doc, content, content_hash,
                calls, token_count, search_vector)
            SELECT %s, %s, 1, g, g, g, 'f' || g, 'f' || g, 'function', 'python', 'a.py', false, false,
                   'x', md5(g::text), '[]', 1, to_tsvector('simple', 'x')
            FROM generate_series(1, %s) g ORDER BY g RETURNING id
            """,
            [repository.pk, source.pk, count],
        )
        ids = [row[0] for row in cursor.fetchall()]
    Repository.objects.filter(pk=repository.pk).update(
        status="ready", active_generation=1, chunk_count=count
    )
    refresh_search_stats(repository.pk)
    return repository, ids


def _store(
    space: EmbeddingSpace, repository: Repository, ids: list[int], vectors: np.ndarray
) -> None:
    """One distinct vector per chunk (each text hash its own)."""
    hashes = [f"{repository.pk}:{cid}" for cid in ids]
    store_vectors(
        space,
        repository.pk,
        {h: [cid] for h, cid in zip(hashes, ids, strict=True)},
        dict(zip(hashes, vectors, strict=True)),
    )


def _clustered(
    rng: np.random.Generator, centers: np.ndarray, which: list[int], count: int
) -> np.ndarray:
    picks = rng.choice(which, size=count)
    vectors = centers[picks] + rng.normal(scale=0.35, size=(count, DIM))
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_filtered_vector_search_recall_against_exact() -> None:
    """10 000 clustered vectors; filters keeping 10 % and 1 % of the rows (repositories whose
    vectors sit in their own clusters, the hard case for a filtered HNSW scan)."""
    rng = np.random.default_rng(7)
    centers = rng.normal(size=(40, DIM))
    layout = {"ten": (1000, [0, 1, 2, 3]), "one": (100, [4]), "rest": (8900, list(range(5, 40)))}
    space = EmbeddingSpace.objects.create(
        key="test/synthetic/32", provider="test", model="synthetic", dim=DIM
    )
    vectors_of: dict[str, tuple[Repository, list[int], np.ndarray]] = {}
    for name, (count, clusters) in layout.items():
        repository, ids = _synthetic_repository(name, count)
        vectors = _clustered(rng, centers, clusters, count)
        _store(space, repository, ids, vectors)
        vectors_of[name] = (repository, ids, vectors)
    embedding_space("test", "synthetic", DIM, key="test/synthetic/32")  # builds the HNSW index
    # The rows are this test's uncommitted transaction: autovacuum cannot see them, and the
    # planner would keep the statistics of the tiny tables earlier tests left (seen: the HNSW
    # scope subquery probing by repository, seconds per search, past the statement timeout).
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE indexing_chunk, indexing_chunkembedding, indexing_embeddingvector")
    queries = _clustered(rng, centers, list(range(40)), 20)  # mostly far from the filtered clusters

    report = []
    for name in ("ten", "one"):
        repository, ids, vectors = vectors_of[name]
        scope = resolve_scope(SearchRequest(query="q", repo_ids=[repository.pk]))
        scope_filter = build_scope_filter(scope, scope_repositories([repository.pk], Viewer()))
        estimated = estimate_rows(scope_filter, None, scope.include_tests, scope.include_docs)
        assert estimated == len(ids)
        for strategy in ("auto", "hnsw", "exact"):
            recalls, elapsed = [], []
            for query in queries:
                truth = {ids[i] for i in np.argsort(-(vectors @ query))[:K]}
                started = time.perf_counter()
                found = vector_search(
                    "q",
                    query,
                    space,
                    scope_filter,
                    limit=K,
                    estimated_rows=estimated,
                    force=None if strategy == "auto" else strategy,  # type: ignore[arg-type]
                )
                elapsed.append(time.perf_counter() - started)
                assert len(found.ranked) == K
                recalls.append(len(truth & {cid for cid, _ in found.ranked}) / K)
            recall = float(np.mean(recalls))
            report.append(
                f"{name} {strategy}: recall@{K} {recall:.2f} p50 {1000 * np.median(elapsed):.1f} ms"
            )
            if strategy in ("auto", "exact"):
                assert recall == 1.0, report
    print("\n" + "\n".join(report))


def test_hnsw_path_with_a_large_scope_falls_back_when_a_filter_leaves_too_few_rows() -> None:
    rng = np.random.default_rng(3)
    space = EmbeddingSpace.objects.create(
        key="test/synthetic/32b", provider="test", model="synthetic", dim=DIM
    )
    repository, ids = _synthetic_repository("big", 600)
    vectors = _clustered(rng, rng.normal(size=(5, DIM)), list(range(5)), 600)
    _store(space, repository, ids, vectors)
    with connection.cursor() as cursor:
        # Six rows in a path the glob keeps.
        cursor.execute("UPDATE indexing_chunk SET path = 'keep/x.py' WHERE id = ANY(%s)", [ids[:6]])
    embedding_space("test", "synthetic", DIM, key="test/synthetic/32b")
    scope = resolve_scope(SearchRequest(query="q", path_globs=["keep/*.py"]))
    scope_filter = build_scope_filter(scope, scope_repositories([repository.pk], Viewer()))
    found = vector_search(
        "q", vectors[100], space, scope_filter, limit=K, estimated_rows=600, exact_max_rows=100
    )
    assert sorted(cid for cid, _ in found.ranked) == sorted(ids[:6])
    assert found.detail["strategy"].startswith("exact")


def test_left_out_list_on_the_hnsw_path_places_the_tests_as_the_exact_list_does() -> None:
    """The left-out tests alone are too selective for HNSW (at 1 M chunks the filtered scan
    visited ~15,000 vectors to keep 2-8, up to 2 s): the HNSW path takes the wider scope's
    nearest chunks and keeps the tests, and the tests placed among the code are the same as
    with the exact list of the left-out tests."""
    rng = np.random.default_rng(5)
    space = EmbeddingSpace.objects.create(
        key="test/synthetic/32c", provider="test", model="synthetic", dim=DIM
    )
    repository, ids = _synthetic_repository("mixed", 600)
    vectors = _clustered(rng, rng.normal(size=(5, DIM)), list(range(5)), 600)
    _store(space, repository, ids, vectors)
    tests = ids[::15]  # 40 test chunks among 600
    with connection.cursor() as cursor:
        cursor.execute("UPDATE indexing_chunk SET is_test = true WHERE id = ANY(%s)", [tests])
    embedding_space("test", "synthetic", DIM, key="test/synthetic/32c")
    scope = resolve_scope(SearchRequest(query="q"))
    repositories = scope_repositories([repository.pk], Viewer())
    code_filter = build_scope_filter(scope, repositories)
    left_out = build_left_out_filter(scope, repositories)
    assert left_out is not None and left_out.only_kinds == {"tests", "docs"}
    for query_vector in (vectors[15], vectors[7], vectors[300]):  # a test's own, code's
        code = vector_search(
            "q", query_vector, space, code_filter, limit=K, estimated_rows=600, force="exact"
        )
        exact = vector_search(
            "q", query_vector, space, left_out, limit=K, estimated_rows=600, force="exact"
        )
        found = vector_search(
            "q", query_vector, space, left_out, limit=K, estimated_rows=600, exact_max_rows=100
        )
        assert found.detail["strategy"] == "hnsw" and found.detail["kinds_kept_after"] == [
            "docs",
            "tests",
        ]
        assert set(cid for cid, _ in found.ranked) <= set(tests)
        # A prefix of the exact list: every left-out test that can rank within K.
        assert found.ranked == exact.ranked[: len(found.ranked)]
        lists = [RankedList("vector", 0, code.ranked)]
        placed = [
            place_left_out(
                fuse_ranked_lists(lists, top=None),
                lists,
                [RankedList("vector", 0, left.ranked)],
                weight=1.0,
                depth=K,
            )
            for left in (exact, found)
        ]
        assert [(c.chunk_id, c.score) for c in placed[0][0]] == [
            (c.chunk_id, c.score) for c in placed[1][0]
        ]
    own = vector_search(
        "q", vectors[15], space, left_out, limit=K, estimated_rows=600, exact_max_rows=100
    )
    assert own.ranked[0][0] == ids[15]  # the test whose vector is the query comes first


CORPUS = [
    SourceDoc(
        "net/retry.py",
        [
            Piece(
                "def retry_with_backoff(call, attempts=5):\n    delay = 0.1\n    for _ in range(attempts):\n        try:\n            return call()\n        except IOError:\n            time.sleep(delay)\n            delay *= 2\n",
                "retry_with_backoff",
            )
        ],
    ),
    SourceDoc(
        "db/pool.py",
        [
            Piece(
                "class ConnectionPool:\n    def __init__(self, size=10):\n        self.size = size\n        self.free = []\n",
                "ConnectionPool",
                "class",
            )
        ],
    ),
    SourceDoc(
        "text/slug.py",
        [Piece("def slugify(title):\n    return '-'.join(title.lower().split())\n", "slugify")],
    ),
    SourceDoc(
        "img/resize.py",
        [
            Piece(
                "def thumbnail(image, width):\n    ratio = width / image.width\n    return image.resize((width, int(image.height * ratio)))\n",
                "thumbnail",
            )
        ],
    ),
]


@pytest.fixture
def embedded_repository() -> Repository:
    repository = indexed_repository("semantic", CORPUS)
    embedder = local_embedder()
    embed_repository(repository, space_for(embedder), embedder.embed, batch_size=32)
    return repository


def test_semantic_query_finds_code_without_shared_words(embedded_repository: Repository) -> None:
    executor = SearchExecutor(embedder=local_embedder(), chat=no_chat())
    result = executor.run(
        SearchRequest(query="wait longer between each failed attempt", use_bm25=False)
    )
    assert result.hits[0].symbol == "retry_with_backoff"
    assert result.hits[0].vector_score is not None and result.hits[0].bm25_score is None
    vector = result.stage("vector")
    assert vector is not None and vector.status == "ran"
    assert vector.detail["queries"][0]["strategy"] == "exact"
    hybrid = executor.run(SearchRequest(query="shrink a picture to a given width"))
    assert hybrid.hits[0].symbol == "thumbnail"
    assert hybrid.total_vector_hits == 4


def test_vector_stage_skips_when_no_vectors_exist_yet() -> None:
    indexed_repository("lexical", CORPUS)
    result = SearchExecutor(embedder=local_embedder(), chat=no_chat()).run(
        SearchRequest(query="slugify title")
    )
    vector = result.stage("vector")
    assert vector is not None and vector.status == "skipped"
    assert "no vectors for this embedding model yet" in vector.reason
    assert result.hits[0].symbol == "slugify"  # full-text alone answers


def test_repositories_without_vectors_are_named(embedded_repository: Repository) -> None:
    plain = indexed_repository("plain", CORPUS[:1])
    result = SearchExecutor(embedder=local_embedder(), chat=no_chat()).run(
        SearchRequest(query="pool of connections")
    )
    vector = result.stage("vector")
    assert vector is not None and vector.status == "ran"
    assert vector.detail["without_vectors"] == [str(plain.pk)]
