"""Read-only queries about indexed repositories."""

from __future__ import annotations

from typing import Any

from django.db.models import Case, Count, IntegerField, OuterRef, QuerySet, Subquery, Value, When
from django.db.models.functions import Coalesce

from indexing.models import (
    FINISHED_JOB_STATES,
    Chunk,
    ChunkEmbedding,
    IndexJob,
    Repository,
)


def _count_per_repository(rows: QuerySet[Any]) -> Coalesce:
    """``rows`` (filtered on ``OuterRef("pk")``) counted as a correlated subquery; 0 when none."""
    counted = rows.order_by().values("repository_id").annotate(n=Count("*")).values("n")
    return Coalesce(Subquery(counted[:1], output_field=IntegerField()), Value(0))


def annotated_repositories(repositories: QuerySet[Repository] | None = None) -> list[Repository]:
    """Repositories with what the API shows of each, in three statements whatever their number.
    Callers narrow ``repositories`` to what the viewer may see first (``visible_repositories``).

    Each one carries ``live_vectors`` (live chunks with a vector of the embedding model in
    force), ``pending_summary_calls`` (chat calls the next run makes for contextual summaries;
    0 when the option is off) and ``current_job`` (the newest unfinished job, else the newest job,
    else None), and its visibility groups prefetched.
    """
    from llm import current_space_key

    live = OuterRef("active_generation")
    vectors = ChunkEmbedding.objects.filter(
        repository_id=OuterRef("pk"), space__key=current_space_key(), chunk__generation=live
    )
    unsummarised = Chunk.objects.filter(repository_id=OuterRef("pk"), generation=live, summary="")
    newest_job = IndexJob.objects.filter(repository_id=OuterRef("pk")).order_by(
        Case(When(state__in=FINISHED_JOB_STATES, then=Value(1)), default=Value(0)), "-created_at"
    )
    rows: list[Repository] = list(
        (repositories if repositories is not None else Repository.objects.all())
        .prefetch_related("visible_to_groups", "indexed_branches")
        .annotate(
            live_vectors=_count_per_repository(vectors),
            pending_summary_calls=Case(
                When(contextual_summaries=True, then=_count_per_repository(unsummarised)),
                default=Value(0),
                output_field=IntegerField(),
            ),
            current_job_pk=Subquery(newest_job.values("pk")[:1]),
        )
    )
    wanted = [row.current_job_pk for row in rows if row.current_job_pk is not None]  # type: ignore[attr-defined]
    jobs = IndexJob.objects.in_bulk(wanted) if wanted else {}
    for row in rows:
        row.current_job = jobs.get(row.current_job_pk)  # type: ignore[attr-defined]
    return rows


def annotated_repository(
    repository_id: Any, repositories: QuerySet[Repository] | None = None
) -> Repository | None:
    """One repository (among ``repositories``: those the viewer may see) with
    ``annotated_repositories``' facts; None when there is none."""
    rows = repositories if repositories is not None else Repository.objects.all()
    found = annotated_repositories(rows.filter(pk=repository_id))
    return found[0] if found else None


def indexed_branch_summaries(repository: Repository) -> list[dict[str, Any]]:
    """Each branch indexed beside the default one, with its freshness (REST and MCP); reads
    ``indexed_branches`` prefetched when the caller prefetched them."""
    return [
        {
            "name": b.name,
            "commit": b.last_indexed_commit,
            "indexed_at": b.last_indexed_at.isoformat() if b.last_indexed_at else None,
            "file_count": b.file_count,
            "chunk_count": b.chunk_count,
            "shared_file_count": b.shared_file_count,
            "remote_tip": b.remote_tip,
            "behind": (b.remote_tip != b.last_indexed_commit)
            if b.remote_tip and b.last_indexed_commit
            else None,
            "pending": b.pending,
            "error": b.error,
        }
        for b in sorted(repository.indexed_branches.all(), key=lambda b: b.name)
    ]
