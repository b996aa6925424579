"""Read-only queries about indexed repositories."""

from __future__ import annotations

from collections.abc import Iterable
from uuid import UUID

from django.db.models import Count, F

from indexing.models import ChunkEmbedding, EmbeddingSpace, Repository


def current_space() -> EmbeddingSpace | None:
    """The embedding space of the model in force, if any vector was ever stored in it."""
    from llm import current_space_key

    return EmbeddingSpace.objects.filter(key=current_space_key()).first()


def vectors_in_current_space(repositories: Iterable[Repository]) -> dict[UUID, int]:
    """For each repository, how many live chunks have a vector of the current model (one query)."""
    ids = [repository.pk for repository in repositories]
    space = current_space()
    if space is None or not ids:
        return dict.fromkeys(ids, 0)
    counts = (
        ChunkEmbedding.objects.filter(
            space=space,
            repository_id__in=ids,
            chunk__generation=F("repository__active_generation"),
        )
        .values("repository_id")
        .annotate(count=Count("id"))
    )
    found = {row["repository_id"]: row["count"] for row in counts}
    return {repository_id: found.get(repository_id, 0) for repository_id in ids}
