"""Embed a repository's live chunks in batches, reusing any vector already computed for the same text.

Vectors are stored per ``EmbeddingSpace`` (provider + model + dimension), once per distinct
embedded text (``EmbeddingVector``, keyed by the hash of header + content); each chunk points at
its vector (``ChunkEmbedding``). Forks, branches and later generations of a file share vectors, so
a space's partial HNSW index over ``vector::vector(dim)`` holds distinct vectors only, and a query
in one space can only ever meet vectors of that space. ``REPO_SEARCH_MAX_VECTOR_ENTRIES`` caps the
chunks with a vector in a space, reused vectors included. Vectors no chunk points at any more are
pruned at the end of each run (under an advisory lock the writers share). Embedding is
best-effort: when the model is unreachable the caller records it and the repository stays
searchable by full text.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.db import connection, transaction

from indexing.models import Chunk, ChunkEmbedding, EmbeddingSpace, EmbeddingVector, Repository

logger = logging.getLogger(__name__)


@dataclass
class EmbedOutcome:
    reused: int = 0
    embedded: int = 0
    missing: int = 0
    unfinished: bool = False  # stopped at its deadline with chunks still to embed


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
        cursor.execute(hnsw_index_sql(space))


# Chosen by measurement on the 1 M-chunk synthetic corpus (forks of one code base) and on
# distinct real code (docs/evaluation.md, "Vector recall"); existing indexes are rebuilt with
# them by migration 0016.
HNSW_M = 32
HNSW_EF_CONSTRUCTION = 200


def hnsw_index_sql(
    space: EmbeddingSpace, m: int = HNSW_M, ef_construction: int = HNSW_EF_CONSTRUCTION
) -> str:
    return (
        f"CREATE INDEX IF NOT EXISTS {space.index_name} ON indexing_embeddingvector "
        f"USING hnsw ((vector::vector({int(space.dim)})) vector_cosine_ops) "
        f"WITH (m = {int(m)}, ef_construction = {int(ef_construction)}) "
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


def embedded_text(chunk: Chunk) -> str:
    """Exactly what the model embeds for a chunk."""
    return embedding_header(chunk) + chunk.content


def embedded_text_hash(chunk: Chunk) -> str:
    """What identifies a vector for reuse: the hash of the embedded text (so the path and the
    summary count, as they change the vector; the same file in a fork or a later commit shares)."""
    return hashlib.sha256(embedded_text(chunk).encode()).hexdigest()


def _missing_chunks(repository: Repository, space: EmbeddingSpace):  # type: ignore[no-untyped-def]
    from indexing.services.branch_generations import live_generations

    # Every row a live generation shows is owned by one of them: this covers every branch.
    return (
        Chunk.objects.filter(repository=repository, generation__in=live_generations(repository.pk))
        .exclude(embeddings__space=space)
        .order_by("id")
    )


# Writers hold it shared for the transaction that looks vectors up and points chunks at them;
# pruning holds it exclusively, so it never deletes a vector a writer is about to point at.
VECTOR_WRITE_LOCK = 0x72730002
LOOKUP_BATCH = 2000


def _lock(space: EmbeddingSpace, *, exclusive: bool) -> None:
    function = "pg_advisory_xact_lock" if exclusive else "pg_advisory_xact_lock_shared"
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {function}(%s, %s)", [VECTOR_WRITE_LOCK, int(space.pk)])


def _vector_ids(space: EmbeddingSpace, hashes: list[str]) -> dict[str, int]:
    found: dict[str, int] = {}
    for start in range(0, len(hashes), LOOKUP_BATCH):
        found.update(
            EmbeddingVector.objects.filter(
                space=space, text_hash__in=hashes[start : start + LOOKUP_BATCH]
            ).values_list("text_hash", "id")
        )
    return found


def _point_chunks(
    space: EmbeddingSpace, repository_id: Any, groups: dict[str, list[int]], ids: dict[str, int]
) -> int:
    """ChunkEmbedding rows for the chunks of each hash that has a vector; the count written."""
    rows = [
        ChunkEmbedding(
            chunk_id=chunk_id, space=space, repository_id=repository_id, embedding_vector_id=ids[h]
        )
        for h, chunk_ids in groups.items()
        if h in ids
        for chunk_id in chunk_ids
    ]
    ChunkEmbedding.objects.bulk_create(rows, ignore_conflicts=True, batch_size=5000)
    return len(rows)


def store_vectors(
    space: EmbeddingSpace, repository_id: Any, groups: dict[str, list[int]], vectors: dict[str, Any]
) -> int:
    """Store one vector per text hash (kept if one is there already) and point the chunks of
    ``groups`` (text hash -> chunk ids) at it, in one transaction; the chunk rows written."""
    with transaction.atomic():
        _lock(space, exclusive=False)
        EmbeddingVector.objects.bulk_create(
            [EmbeddingVector(space=space, text_hash=h, vector=v) for h, v in vectors.items()],
            ignore_conflicts=True,
        )
        return _point_chunks(space, repository_id, groups, _vector_ids(space, list(groups)))


def reuse_vectors(
    space: EmbeddingSpace, repository_id: Any, groups: dict[str, list[int]]
) -> set[str]:
    """Point chunks at vectors already stored for their text; the hashes that had one."""
    with transaction.atomic():
        _lock(space, exclusive=False)
        ids = _vector_ids(space, list(groups))
        _point_chunks(space, repository_id, groups, ids)
    return set(ids)


def prune_orphan_vectors(space: EmbeddingSpace) -> int:
    """Delete the space's vectors no chunk points at any more (old generations, deleted
    repositories); the number deleted."""
    with transaction.atomic():
        _lock(space, exclusive=True)
        with connection.cursor() as cursor:
            cursor.execute(
                "DELETE FROM indexing_embeddingvector v WHERE v.space_id = %s AND NOT EXISTS"
                " (SELECT 1 FROM indexing_chunkembedding e WHERE e.embedding_vector_id = v.id)",
                [space.pk],
            )
            return cursor.rowcount


def _within_cap(
    groups: dict[str, list[Chunk]], space: EmbeddingSpace, max_vectors: int | None
) -> tuple[dict[str, list[Chunk]], int]:
    """The groups that fit under the cap (chunks with a vector in the space, reused ones
    included), in chunk order; and how many chunks are left out."""
    if max_vectors is None:
        return groups, 0
    room = max(max_vectors - ChunkEmbedding.objects.filter(space=space).count(), 0)
    if sum(len(chunks) for chunks in groups.values()) <= room:
        return groups, 0
    kept: dict[str, list[Chunk]] = {}
    used = missing = 0
    for text_hash, chunks in groups.items():
        if used + len(chunks) > room:
            missing += len(chunks)
            continue
        kept[text_hash] = chunks
        used += len(chunks)
    return kept, missing


# Chunks read per round: a round's texts are held in memory at once, however large the repository.
PAGE_CHUNKS = 2048


def embed_repository(
    repository: Repository,
    space: EmbeddingSpace,
    embed: Callable[[list[str]], np.ndarray],
    *,
    batch_size: int,
    on_progress: Callable[[EmbedOutcome], None] | None = None,
    max_vectors: int | None = None,
    prune: bool = True,
    deadline: float | None = None,
) -> EmbedOutcome:
    """Fill in every missing vector of the live generation: chunks whose text already has a
    vector in the space point at it, the others are embedded (each distinct text once). Model
    errors propagate to the caller after the batches already done are saved. ``max_vectors``
    caps the chunks with a vector in the space; chunks past the cap are left without one and
    counted in ``missing``. With a ``deadline`` (``time.monotonic()``), it stops after the
    first batch that ends past it and says ``unfinished``: calling it again goes on from there.
    Chunks are read ``PAGE_CHUNKS`` at a time in id order; ``on_progress`` sees the outcome
    so far after each batch."""
    outcome = EmbedOutcome()
    while True:
        page = list(
            _missing_chunks(repository, space).only(
                "id", "path", "symbol", "kind", "content", "content_hash", "summary"
            )[:PAGE_CHUNKS]
        )
        if not page:
            break
        before = outcome.reused + outcome.embedded
        out_of_time = _embed_page(
            page, repository, space, embed, outcome,
            batch_size=batch_size, on_progress=on_progress, max_vectors=max_vectors,
            deadline=deadline,
        )  # fmt: skip
        if outcome.missing:  # the cap is reached: every chunk still without a vector counts
            outcome.missing = _missing_chunks(repository, space).count()
            break
        if outcome.reused + outcome.embedded == before:
            break  # nothing could be written: another round would read the same page
        if not out_of_time and len(page) < PAGE_CHUNKS:
            break  # that was the last page, done
        if out_of_time or (deadline is not None and time.monotonic() >= deadline):
            outcome.unfinished = True
            return outcome
    if prune:
        pruned = prune_orphan_vectors(space)
        if pruned:
            logger.info("space=%s pruned %s vectors no chunk uses", space.key, pruned)
    return outcome


def _embed_page(
    page: list[Chunk],
    repository: Repository,
    space: EmbeddingSpace,
    embed: Callable[[list[str]], np.ndarray],
    outcome: EmbedOutcome,
    *,
    batch_size: int,
    on_progress: Callable[[EmbedOutcome], None] | None,
    max_vectors: int | None,
    deadline: float | None,
) -> bool:
    """One round of ``embed_repository`` over ``page``; True when it stopped at the deadline
    with batches of the page left."""
    by_hash: dict[str, list[Chunk]] = {}
    for chunk in page:
        by_hash.setdefault(embedded_text_hash(chunk), []).append(chunk)
    by_hash, outcome.missing = _within_cap(by_hash, space, max_vectors)
    ids = {h: [c.pk for c in chunks] for h, chunks in by_hash.items()}
    had = reuse_vectors(space, repository.pk, ids) if ids else set()
    reused = sum(len(ids[h]) for h in had)
    outcome.reused += reused
    if reused and on_progress is not None:
        on_progress(outcome)
    texts = {h: embedded_text(chunks[0]) for h, chunks in by_hash.items() if h not in had}
    # Longest first: each call gets texts of about one length, so a model that pads a batch to
    # its longest text (a model server) wastes little, and the built-in one fills its packed
    # batches evenly (bench/embedding_runtime.py).
    unique = sorted(texts, key=lambda h: len(texts[h]), reverse=True)
    for start in range(0, len(unique), batch_size):
        batch = unique[start : start + batch_size]
        vectors = embed([texts[h] for h in batch])
        if vectors.shape != (len(batch), space.dim):
            raise ValueError(
                f"embedding model returned shape {vectors.shape}, expected ({len(batch)}, {space.dim})"
            )
        outcome.embedded += store_vectors(
            space,
            repository.pk,
            {h: ids[h] for h in batch},
            dict(zip(batch, vectors, strict=True)),
        )
        if on_progress is not None:
            on_progress(outcome)
        more = start + batch_size < len(unique)
        if more and deadline is not None and time.monotonic() >= deadline:
            return True
    return False


def count_embedded(repository: Repository, space: EmbeddingSpace) -> int:
    return ChunkEmbedding.objects.filter(
        space=space, chunk__repository=repository, chunk__generation=repository.active_generation
    ).count()


def count_embedded_generation(
    repository: Repository, space: EmbeddingSpace | None, generation: int
) -> int:
    """Chunks of one branch's generation (owned and shared) with a vector in ``space``."""
    if space is None or not generation:
        return 0
    from django.db.models import Q

    return (
        ChunkEmbedding.objects.filter(
            Q(chunk__generation=generation) | Q(chunk__file__shared_with__generation=generation),
            space=space,
            chunk__repository=repository,
        )
        .distinct()
        .count()
    )
