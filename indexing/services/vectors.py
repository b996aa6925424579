"""Embed a repository's live chunks in batches, reusing any vector already computed for the same text.

Vectors are stored per ``EmbeddingSpace`` (provider + model + dimension). Each space gets its own
partial HNSW index over ``vector::vector(dim)``, so a query in one space can only ever meet
vectors of that space. Embedding is best-effort: when the model is unreachable the caller records
it and the repository stays searchable by full text.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.db import connection, transaction

from indexing.models import Chunk, ChunkEmbedding, EmbeddingSpace, Repository

logger = logging.getLogger(__name__)


@dataclass
class EmbedOutcome:
    reused: int = 0
    embedded: int = 0
    missing: int = 0


def embedding_space(provider: str, model: str, dim: int, key: str | None = None) -> EmbeddingSpace:
    """The space for this model, created with its HNSW index on first use.

    ``key`` is the model layer's ``space_key`` (it also names how long texts are embedded);
    pass ``space_for(embedder)`` where an embedder is at hand.
    """
    space, _created = EmbeddingSpace.objects.get_or_create(
        key=key or f"{provider}/{model}/{dim}",
        defaults={"provider": provider, "model": model, "dim": dim},
    )
    if space.dim != dim:
        raise ValueError(f"embedding space {space.key} has {space.dim} dimensions, not {dim}")
    if space.pk not in _indexed_spaces:
        _ensure_hnsw_index(space)
        _indexed_spaces.add(space.pk)
    return space


_indexed_spaces: set[int] = set()


# Two first embeds of a new space (two repositories added together, e.g. by a repository file)
# would both run CREATE INDEX IF NOT EXISTS; PostgreSQL can then refuse one with a duplicate
# pg_class row. One transaction-scoped advisory lock per space makes the second wait and see it.
HNSW_INDEX_LOCK = 0x72730001


def _ensure_hnsw_index(space: EmbeddingSpace) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_indexes WHERE indexname = %s", [space.index_name])
        if cursor.fetchone():
            return
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [HNSW_INDEX_LOCK, int(space.pk)])
        cursor.execute("SELECT 1 FROM pg_indexes WHERE indexname = %s", [space.index_name])
        if cursor.fetchone():
            return
        if connection.in_atomic_block:
            # Deferred foreign-key checks pending in this transaction would block CREATE INDEX.
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute(
            f"CREATE INDEX IF NOT EXISTS {space.index_name} ON indexing_chunkembedding "
            f"USING hnsw ((vector::vector({int(space.dim)})) vector_cosine_ops) "
            f"WHERE space_id = {int(space.pk)}"
        )


def space_for(embedder: Any) -> EmbeddingSpace:
    """The space of an ``llm`` embedder (its provider, model, dimension and space key)."""
    return embedding_space(embedder.provider, embedder.model, embedder.dim, embedder.space_key)


def embedding_header(chunk: Chunk) -> str:
    """The small header embedded with each chunk: where it lives, what it defines and, with
    contextual retrieval, the model's one-line summary."""
    parts = [f"path: {chunk.path}"]
    if chunk.symbol:
        parts.append(f"{chunk.kind or 'symbol'}: {chunk.symbol}")
    if chunk.summary:
        parts.append(f"summary: {chunk.summary}")
    return "\n".join(parts) + "\n"


def embedded_text_hash(chunk: Chunk) -> str:
    """What identifies the embedded text for reuse: the content, and the summary if any."""
    if not chunk.summary:
        return chunk.content_hash
    return hashlib.sha256(f"{chunk.content_hash}\n{chunk.summary}".encode()).hexdigest()


def _missing_chunks(repository: Repository, space: EmbeddingSpace):  # type: ignore[no-untyped-def]
    return (
        Chunk.objects.filter(repository=repository, generation=repository.active_generation)
        .exclude(embeddings__space=space)
        .order_by("id")
    )


def reuse_existing_vectors(repository: Repository, space: EmbeddingSpace) -> int:
    """Copy vectors of identical text already embedded in this space (forks, old commits)."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO indexing_chunkembedding (chunk_id, space_id, repository_id, content_hash, vector)
            SELECT c.id, %(space)s, c.repository_id, c.content_hash, src.vector
            FROM indexing_chunk c
            JOIN LATERAL (
                SELECT e.vector FROM indexing_chunkembedding e
                WHERE e.space_id = %(space)s AND e.content_hash = c.content_hash LIMIT 1
            ) src ON TRUE
            WHERE c.repository_id = %(repo)s AND c.generation = %(gen)s AND c.summary = ''
              AND NOT EXISTS (SELECT 1 FROM indexing_chunkembedding x
                              WHERE x.chunk_id = c.id AND x.space_id = %(space)s)
            ON CONFLICT DO NOTHING
            """,
            {"space": space.pk, "repo": repository.pk, "gen": repository.active_generation},
        )
        return cursor.rowcount


def embed_repository(
    repository: Repository,
    space: EmbeddingSpace,
    embed: Callable[[list[str]], np.ndarray],
    *,
    batch_size: int,
    on_progress: Callable[[int], None] | None = None,
    max_vectors: int | None = None,
) -> EmbedOutcome:
    """Fill in every missing vector of the live generation. Model errors propagate to the caller
    after the batches already done are saved. ``max_vectors`` caps the vectors stored in the
    space; chunks past the cap are left without one and counted in ``missing``."""
    outcome = EmbedOutcome(reused=reuse_existing_vectors(repository, space))
    pending = list(
        _missing_chunks(repository, space).only(
            "id", "path", "symbol", "kind", "content", "content_hash", "summary"
        )
    )

    # Identical text inside this run is embedded once.
    by_hash: dict[str, list[Chunk]] = {}
    for chunk in pending:
        by_hash.setdefault(embedded_text_hash(chunk), []).append(chunk)
    unique = [group[0] for group in by_hash.values()]
    if max_vectors is not None:
        room = max(max_vectors - ChunkEmbedding.objects.filter(space=space).count(), 0)
        if sum(len(by_hash[embedded_text_hash(chunk)]) for chunk in unique) > room:
            kept: list[Chunk] = []
            used = 0
            for chunk in unique:
                twins = len(by_hash[embedded_text_hash(chunk)])
                if used + twins > room:
                    outcome.missing += twins
                    continue
                kept.append(chunk)
                used += twins
            unique = kept
    for start in range(0, len(unique), batch_size):
        batch = unique[start : start + batch_size]
        vectors = embed([embedding_header(chunk) + chunk.content for chunk in batch])
        if vectors.shape != (len(batch), space.dim):
            raise ValueError(
                f"embedding model returned shape {vectors.shape}, expected ({len(batch)}, {space.dim})"
            )
        rows = [
            ChunkEmbedding(
                chunk_id=twin.pk, space=space, repository_id=repository.pk,
                content_hash=embedded_text_hash(chunk), vector=vector,
            )
            for chunk, vector in zip(batch, vectors, strict=True)
            for twin in by_hash[embedded_text_hash(chunk)]
        ]  # fmt: skip
        with transaction.atomic():
            ChunkEmbedding.objects.bulk_create(rows, ignore_conflicts=True)
        outcome.embedded += len(rows)
        if on_progress is not None:
            on_progress(outcome.reused + outcome.embedded)
    return outcome


def count_embedded(repository: Repository, space: EmbeddingSpace) -> int:
    return ChunkEmbedding.objects.filter(
        space=space, chunk__repository=repository, chunk__generation=repository.active_generation
    ).count()
