"""The vectors' models: one ``EmbeddingSpace`` per model and dimension, one ``EmbeddingVector``
per distinct embedded text in a space, and ``ChunkEmbedding`` mapping each chunk to its vector
(re-exported by ``indexing.models``)."""

from __future__ import annotations

from django.db import models
from pgvector.django import VectorField


class EmbeddingSpace(models.Model):
    """One embedding model at one dimension. Vectors are only ever compared within a space."""

    key = models.CharField(
        max_length=300,
        unique=True,
        help_text="The model layer's space key, e.g. local/all-MiniLM-L6-v2/384[/windows].",
    )
    provider = models.CharField(max_length=32)
    model = models.CharField(max_length=200)
    dim = models.PositiveIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.key

    @property
    def index_name(self) -> str:
        """The space's partial HNSW index over its distinct vectors (``EmbeddingVector``)."""
        return f"embvec_hnsw_space_{self.pk}"


class EmbeddingVector(models.Model):
    """One vector per distinct embedded text in a space: identical chunks (forks, branches,
    older generations, the same file twice) share it. ``text_hash`` is the hash of exactly
    what was embedded (header + content, see ``indexing.services.vectors``). Each space has a
    partial HNSW index over ``vector::vector(dim)``, so the index holds distinct vectors only."""

    space = models.ForeignKey(EmbeddingSpace, on_delete=models.PROTECT, related_name="vectors")
    text_hash = models.CharField(max_length=64)
    vector = VectorField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["space", "text_hash"], name="unique_space_text_hash"),
        ]

    def __str__(self) -> str:
        return f"{self.text_hash[:12]} in {self.space_id}"


class ChunkEmbedding(models.Model):
    """That a chunk has a vector in one space, and which (shared) ``EmbeddingVector`` it is."""

    chunk = models.ForeignKey("indexing.Chunk", on_delete=models.CASCADE, related_name="embeddings")
    space = models.ForeignKey(EmbeddingSpace, on_delete=models.PROTECT, related_name="embeddings")
    repository = models.ForeignKey(
        "indexing.Repository", on_delete=models.CASCADE, related_name="+"
    )
    embedding_vector = models.ForeignKey(
        EmbeddingVector, on_delete=models.CASCADE, related_name="chunk_embeddings"
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["chunk", "space"], name="unique_chunk_embedding"),
        ]
        indexes = [
            models.Index(fields=["space", "repository"], name="chunkemb_space_repo"),
        ]

    def __str__(self) -> str:
        return f"{self.chunk_id} in {self.space_id}"
