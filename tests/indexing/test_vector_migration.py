"""The migration to distinct vectors keeps every chunk's vector: old rows (one vector per chunk)
become one ``EmbeddingVector`` per distinct embedded text, each chunk pointing at its own, and
the space's HNSW index is rebuilt on the new table."""

from __future__ import annotations

import numpy as np
import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from indexing.services.vectors import embedded_text_hash
from search.retrieval.vector import vector_literal

BEFORE = [("indexing", "0010_repository_file")]


def _migrate(targets: list[tuple[str, str]]) -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)


@pytest.mark.django_db(transaction=True)
def test_old_vectors_are_moved_to_one_row_per_distinct_text() -> None:
    executor = MigrationExecutor(connection)
    latest = executor.loader.graph.leaf_nodes("indexing")
    _migrate(BEFORE)
    try:
        rng = np.random.default_rng(5)
        vectors = rng.normal(size=(3, 4))
        # The models as they were at BEFORE (later migrations add columns, e.g. branches).
        state = MigrationExecutor(connection).loader.project_state(BEFORE).apps
        Chunk, EmbeddingSpace, Repository, SourceFile = (
            state.get_model("indexing", name)
            for name in ("Chunk", "EmbeddingSpace", "Repository", "SourceFile")
        )

        space = EmbeddingSpace.objects.create(key="t/m/4", provider="t", model="m", dim=4).pk
        rows = []
        with connection.cursor() as cursor:
            cursor.execute(
                f"CREATE INDEX chunkemb_hnsw_space_{space} ON indexing_chunkembedding USING hnsw"
                f" ((vector::vector(4)) vector_cosine_ops) WHERE space_id = {space}"
            )
            for name in ("fork/a", "fork/b"):
                repository = Repository.objects.create(
                    url=f"https://example.org/{name}.git", name=name, status="ready",
                    active_generation=1,
                )  # fmt: skip
                source = SourceFile.objects.create(
                    repository=repository, generation=1, path="a.py", blob_sha="x"
                )
                for number in range(3):
                    chunk = Chunk.objects.create(
                        repository=repository, file=source, generation=1, index=number,
                        start_line=1, end_line=1, symbol=f"f{number}", kind="function",
                        language="python", path="a.py", content=f"def f{number}(): pass",
                        content_hash="h",
                    )  # fmt: skip
                    rows.append((chunk.pk, number))
                    cursor.execute(
                        "INSERT INTO indexing_chunkembedding (chunk_id, space_id, repository_id,"
                        " content_hash, vector) VALUES (%s, %s, %s, 'h', %s::vector)",
                        [chunk.pk, space, repository.pk, vector_literal(vectors[number])],
                    )
    finally:
        _migrate(latest)
    from indexing.models import Chunk, ChunkEmbedding, EmbeddingVector

    assert EmbeddingVector.objects.filter(space_id=space).count() == 3  # the fork shares them
    assert ChunkEmbedding.objects.filter(space_id=space).count() == 6
    for chunk_id, number in rows:
        stored = ChunkEmbedding.objects.get(chunk_id=chunk_id).embedding_vector
        assert stored.text_hash == embedded_text_hash(Chunk.objects.get(pk=chunk_id))
        assert np.allclose(np.asarray(stored.vector), vectors[number], atol=1e-6)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tablename FROM pg_indexes WHERE indexname LIKE '%%hnsw_space_' || %s",
            [str(space)],
        )
        assert cursor.fetchall() == [("indexing_embeddingvector",)]
