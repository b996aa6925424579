"""Request and response shapes for repositories and jobs."""

from __future__ import annotations

from typing import Any, cast

from rest_framework import serializers

from indexing.models import IndexJob, Repository
from indexing.selectors import vectors_in_current_space
from indexing.services.repositories import active_job
from indexing.services.summaries import summary_cost
from reposearch.api_serializers import StrictBooleanField, StrictCharField, StrictSerializer


class RepositoryCreateSerializer(StrictSerializer):
    url = StrictCharField(
        max_length=2048,
        trim_whitespace=True,
        help_text="https://, http:// or git:// URL, or an absolute local path / file:// URL "
        "when REPO_SEARCH_ALLOW_LOCAL_PATHS is on.",
    )
    branch = StrictCharField(
        max_length=255,
        required=False,
        allow_blank=True,
        default="",
        help_text="Empty: the remote's default branch. Checked with git's branch-name rules.",
    )
    name = StrictCharField(max_length=200, required=False, allow_blank=True, default="")
    contextual_summaries = StrictBooleanField(
        required=False,
        default=False,
        help_text="Opt-in contextual retrieval: one chat-model call per chunk at index time.",
    )


class RepositoryUpdateSerializer(StrictSerializer):
    name = StrictCharField(max_length=200, required=False)
    contextual_summaries = StrictBooleanField(required=False)


class IndexJobSerializer(serializers.ModelSerializer):
    repository_id = serializers.UUIDField(read_only=True)
    duration_seconds = serializers.FloatField(read_only=True, allow_null=True)
    progress = serializers.SerializerMethodField()

    class Meta:
        model = IndexJob
        fields = [
            "id", "repository_id", "kind", "state", "generation", "commit", "files_total",
            "files_done", "files_skipped", "chunks_total", "chunks_embedded", "summaries_total",
            "summaries_done", "bytes_fetched",
            "stage_timings", "failures", "attempts", "error", "heartbeat_at", "created_at",
            "started_at", "finished_at", "duration_seconds", "progress",
        ]  # fmt: skip
        read_only_fields = fields

    def get_progress(self, job: IndexJob) -> float:
        """A 0..1 estimate across stages, for progress bars."""
        order = ["queued", "cloning", "walking", "chunking", "storing", "embedding"]
        if job.is_finished:
            return 1.0
        stage = order.index(job.state) if job.state in order else 0
        within = 0.0
        if job.state == "chunking" and job.files_total:
            within = job.files_done / job.files_total
        elif job.state == "embedding" and job.chunks_total:
            within = job.chunks_embedded / job.chunks_total
        weights = [0.0, 0.05, 0.15, 0.2, 0.45, 0.55, 1.0]
        return round(weights[stage] + (weights[stage + 1] - weights[stage]) * within, 3)


class RepositorySerializer(serializers.ModelSerializer):
    """``vectors`` counts live chunks with a vector of the embedding model in force; after the
    model changes it drops to 0 until re-embedding catches up (``needs_reembedding``)."""

    current_job = serializers.SerializerMethodField()
    vectors = serializers.SerializerMethodField()
    vectors_missing = serializers.SerializerMethodField()
    needs_reembedding = serializers.SerializerMethodField()
    contextual_summary_calls = serializers.SerializerMethodField(
        help_text="Chat-model calls the next run makes for contextual summaries (its cost)."
    )

    class Meta:
        model = Repository
        fields = [
            "id", "url", "name", "branch", "status", "error", "last_indexed_commit",
            "last_indexed_at", "file_count", "chunk_count", "embedded_count", "vectors",
            "contextual_summaries", "contextual_summary_calls",
            "vectors_missing", "needs_reembedding",
            "size_bytes", "indexed_bytes", "created_at", "updated_at", "current_job",
        ]  # fmt: skip
        read_only_fields = fields

    def _vectors(self, repository: Repository) -> int:
        context = cast(dict[str, Any], self.context)  # the root serializer's own dict
        cache: dict[Any, int] = context.setdefault("vectors", {})
        if repository.pk not in cache:
            # Serialising a list: count for the whole list in one query.
            batch = getattr(self.parent, "instance", None) or [repository]
            cache.update(vectors_in_current_space(batch))
        return int(cache.get(repository.pk, 0))

    def get_vectors(self, repository: Repository) -> int:
        return self._vectors(repository)

    def get_vectors_missing(self, repository: Repository) -> int:
        return max(repository.chunk_count - self._vectors(repository), 0)

    def get_needs_reembedding(self, repository: Repository) -> bool:
        return repository.status == "ready" and self.get_vectors_missing(repository) > 0

    def get_contextual_summary_calls(self, repository: Repository) -> int:
        return summary_cost(repository)

    def get_current_job(self, repository: Repository) -> dict[str, Any] | None:
        job = active_job(repository) or repository.jobs.order_by("-created_at").first()
        return IndexJobSerializer(job).data if job is not None else None
