"""Bulk loading for the synthetic corpus (bench/build_synthetic_corpus.py): binary COPY, the
distinct-vector writer, and dropping / restoring secondary indexes around the load."""

from __future__ import annotations

from typing import Any

from synthetic_base import log


def secondary_indexes(cursor: Any, tables: list[str]) -> list[tuple[str, str]]:
    """(name, definition) of indexes that back no constraint, to drop and rebuild."""
    cursor.execute(
        """
        SELECT i.indexname, i.indexdef FROM pg_indexes i
        WHERE i.tablename = ANY(%s) AND i.schemaname = 'public'
          AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid =
                          (quote_ident(i.schemaname) || '.' || quote_ident(i.indexname))::regclass)
        ORDER BY i.indexname
        """,
        [tables],
    )
    return list(cursor.fetchall())


def restore_model_indexes() -> None:
    """Create any index the models declare that is missing (on the emptied tables: instant)."""
    from django.db import connection

    from indexing.models import Chunk, ChunkEmbedding, EmbeddingVector

    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname FROM pg_indexes WHERE schemaname = 'public'")
        present = {row[0] for row in cursor.fetchall()}
    with connection.schema_editor() as editor:
        for model in (Chunk, ChunkEmbedding, EmbeddingVector):
            for index in model._meta.indexes:
                if index.name not in present:
                    log(f"restoring missing index {index.name}")
                    editor.add_index(model, index)


def copy_rows(cursor: Any, sql: str, types: list[str], rows: Any) -> None:
    """Binary COPY of ``rows`` with ``sql`` (``COPY table (columns) FROM STDIN``)."""
    from pgvector.psycopg import register_vector

    # A cursor copies its connection's adapters when created: register first, then open one.
    register_vector(cursor.connection)
    raw = cursor.connection.cursor()
    with raw.copy(sql + " WITH (FORMAT BINARY)") as copy:
        copy.set_types(types)
        for row in rows:
            copy.write_row(row)


class VectorWriter:
    """Distinct vectors (one per text hash, with ids given here) and the chunks pointing at them."""

    def __init__(self, cursor: Any, space_id: int) -> None:
        self.cursor, self.space_id = cursor, space_id
        self.ids: dict[str, int] = {}

    def write(self, repo_id: Any, chunks: list[tuple[int, str]], vectors: dict[str, Any]) -> None:
        """``chunks``: (chunk id, text hash); ``vectors``: text hash -> vector for new texts."""
        new = [(h, v) for h, v in vectors.items() if h not in self.ids]
        rows = []
        for text_hash, vector in new:
            self.ids[text_hash] = len(self.ids) + 1
            rows.append((self.ids[text_hash], self.space_id, text_hash, vector))
        copy_rows(
            self.cursor,
            "COPY indexing_embeddingvector (id, space_id, text_hash, vector) FROM STDIN",
            ["int8", "int8", "varchar", "vector"],
            rows,
        )
        copy_rows(
            self.cursor,
            "COPY indexing_chunkembedding (chunk_id, space_id, repository_id, embedding_vector_id)"
            " FROM STDIN",
            ["int8", "int8", "uuid", "int8"],
            ((cid, self.space_id, repo_id, self.ids[h]) for cid, h in chunks),
        )

    def finish(self) -> None:
        self.cursor.execute(
            "SELECT setval(pg_get_serial_sequence('indexing_embeddingvector', 'id'), %s)",
            [max(len(self.ids), 1)],
        )
