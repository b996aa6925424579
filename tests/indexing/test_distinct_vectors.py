"""One vector per distinct embedded text: forks share vectors, the cap counts every chunk with a
vector (reused ones too), vectors no chunk uses are pruned, old rows are migrated by the hash
the embed stage computes."""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np
import pytest
from django.db import connection

import llm
from indexing.models import Chunk, ChunkEmbedding, EmbeddingVector
from indexing.services.vectors import embed_repository, embedded_text_hash, space_for
from search.executor import SearchExecutor, SearchRequest
from tests import factories

pytestmark = pytest.mark.django_db

SOURCE = [
    "def parse_http_header(line):\n    return line.split(':', 1)",
    "def retry_with_backoff(fn, attempts):\n    for _ in range(attempts):\n        fn()",
    "class ConnectionPool:\n    def acquire(self):\n        return self.free.pop()",
]


class CountingEmbedder:
    """The local model, counting the texts it was asked to embed."""

    def __init__(self) -> None:
        self.inner = llm.get_embedder()
        self.texts: list[str] = []

    def embed(self, texts: list[str]) -> np.ndarray:
        self.texts += texts
        return np.asarray(self.inner.embed(texts))


def _fork(name: str, path: str = "src/app.py") -> Any:
    return factories.indexed_repository(
        name, SOURCE, url=f"https://example.org/{name}.git", path=path
    )


def test_a_fork_reuses_every_vector_and_the_index_holds_each_text_once() -> None:
    embedder = CountingEmbedder()
    space = space_for(embedder.inner)
    first, fork = _fork("team/app"), _fork("someone/app")
    done = embed_repository(first, space, embedder.embed, batch_size=32)
    assert (done.embedded, done.reused, len(embedder.texts)) == (3, 0, 3)
    again = embed_repository(fork, space, embedder.embed, batch_size=32)
    assert (again.embedded, again.reused, len(embedder.texts)) == (0, 3, 3)
    assert EmbeddingVector.objects.filter(space=space).count() == 3
    assert ChunkEmbedding.objects.filter(space=space).count() == 6
    # Both repositories' chunks are found, at the same similarity, nearest first.
    result = SearchExecutor(embedder=embedder.inner).run(
        SearchRequest(query="take a free connection from the pool", use_bm25=False, limit=10)
    )
    top = result.hits[:2]
    assert {hit.repo_id for hit in top} == {first.pk, fork.pk}
    assert all("class ConnectionPool" in hit.content for hit in top)
    assert top[0].vector_score == top[1].vector_score


def test_the_same_code_at_another_path_is_embedded_again() -> None:
    """The path is part of the embedded text (the header), so it is part of the key."""
    embedder = CountingEmbedder()
    space = space_for(embedder.inner)
    embed_repository(_fork("a/one"), space, embedder.embed, batch_size=32)
    moved = embed_repository(
        _fork("a/two", path="lib/moved.py"), space, embedder.embed, batch_size=32
    )
    assert (moved.embedded, moved.reused) == (3, 0)
    assert EmbeddingVector.objects.filter(space=space).count() == 6


def test_reused_vectors_count_against_the_cap() -> None:
    embedder = CountingEmbedder()
    space = space_for(embedder.inner)
    embed_repository(_fork("cap/one"), space, embedder.embed, batch_size=32, max_vectors=4)
    fork = _fork("cap/two")
    capped = embed_repository(fork, space, embedder.embed, batch_size=32, max_vectors=4)
    assert (capped.reused, capped.embedded, capped.missing) == (1, 0, 2)
    assert ChunkEmbedding.objects.filter(space=space).count() == 4


def test_vectors_no_chunk_uses_are_pruned_and_shared_ones_stay() -> None:
    embedder = CountingEmbedder()
    space = space_for(embedder.inner)
    first, fork = _fork("p/one"), _fork("p/two")
    embed_repository(first, space, embedder.embed, batch_size=32)
    embed_repository(fork, space, embedder.embed, batch_size=32)
    # The fork moves on: a new generation with one function changed.
    changed = [*SOURCE[:2], "class ConnectionPool:\n    def acquire(self):\n        return None"]
    factories.index_generation(
        fork, [factories.functions_file(changed, path="src/app.py", symbol_prefix="s")]
    )
    fork.refresh_from_db()
    embed_repository(fork, space, embedder.embed, batch_size=32)
    assert (
        EmbeddingVector.objects.filter(space=space).count() == 4
    )  # the old text is still used by p/one
    first.delete()  # the ORM cascade; the services delete with raw SQL, to the same effect
    embed_repository(fork, space, embedder.embed, batch_size=32)
    live = set(
        ChunkEmbedding.objects.filter(space=space).values_list("embedding_vector_id", flat=True)
    )
    assert set(EmbeddingVector.objects.filter(space=space).values_list("id", flat=True)) == live
    assert len(live) == 3


def test_the_migration_hashes_old_rows_exactly_as_the_embed_stage_does() -> None:
    repository = factories.indexed_repository(
        "m/hash", [*SOURCE, "x = 1  # no symbol here"], url="https://example.org/m/hash.git"
    )
    Chunk.objects.filter(repository=repository, symbol__startswith="s").update(kind="")
    Chunk.objects.filter(pk=Chunk.objects.filter(repository=repository).first().pk).update(
        summary="Parses a header."
    )
    fill = importlib.import_module("indexing.migrations.0012_fill_embeddingvector")
    chunks = list(Chunk.objects.filter(repository=repository))
    assert {c.summary for c in chunks} >= {"", "Parses a header."}
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT c.id, {fill.TEXT_HASH} FROM indexing_chunk c WHERE c.repository_id = %s",  # noqa: S608
            [repository.pk],
        )
        in_sql = dict(cursor.fetchall())
    assert in_sql == {c.pk: embedded_text_hash(c) for c in chunks}
