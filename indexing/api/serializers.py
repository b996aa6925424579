"""Request and response shapes for repositories and jobs."""

from __future__ import annotations

from typing import Any, cast

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from indexing import progress as job_progress
from indexing.models import IndexJob, Repository
from indexing.selectors import indexed_branch_summaries
from indexing.services.visibility import visibility_group_names
from reposearch.api_serializers import (
    StrictBooleanField,
    StrictCharField,
    StrictIntegerField,
    StrictSerializer,
)


def _visibility_groups_field() -> serializers.ListField:
    return serializers.ListField(
        child=StrictCharField(max_length=150),
        required=False,
        max_length=50,
        help_text="Names of existing groups whose members alone may see the repository (an "
        "administrator may name any; another writer only groups they belong to; any other "
        "name: 400 unknown_group); [] or left out: every account.",
    )


def _branches_field() -> serializers.ListField:
    return serializers.ListField(
        child=StrictCharField(max_length=255),
        required=False,
        max_length=100,
        help_text="More branches to index beside the default one: names or globs "
        "(release/*), matched against the remote's branches; at most REPO_SEARCH_MAX_BRANCHES "
        "with the default. [] stops indexing the others (their rows the default uses stay).",
    )


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
    branches = _branches_field()
    contextual_summaries = StrictBooleanField(
        required=False,
        default=False,
        help_text="Opt-in contextual retrieval: one chat-model call per chunk at index time.",
    )
    visibility_groups = _visibility_groups_field()


class RepositoryUpdateSerializer(StrictSerializer):
    name = StrictCharField(max_length=200, required=False)
    branches = _branches_field()
    visibility_groups = _visibility_groups_field()
    contextual_summaries = StrictBooleanField(required=False)
    poll_interval_secs = StrictIntegerField(
        required=False,
        allow_null=True,
        min_value=0,
        max_value=30 * 24 * 3600,
        help_text="Seconds between checks of the remote; null: REPO_SEARCH_POLL_INTERVAL_SECS; "
        "0: never.",
    )


class WaitingSerializer(serializers.Serializer):
    queue = serializers.CharField(help_text='"git", "index", "embed" or "clone slot".')
    jobs_ahead = serializers.IntegerField(help_text="Jobs running or queued before this one.")
    reason = serializers.CharField(help_text='e.g. "waiting: 2 jobs ahead in the embed queue".')


class IndexJobSerializer(serializers.ModelSerializer):
    """``progress``, ``eta_seconds``, ``stage_eta_seconds`` and ``waiting`` come from
    ``indexing.progress`` (rates measured per stage; see there)."""

    repository_id = serializers.UUIDField(read_only=True)
    duration_seconds = serializers.FloatField(read_only=True, allow_null=True)
    progress = serializers.SerializerMethodField()
    eta_seconds = serializers.SerializerMethodField(
        help_text="Seconds left in the whole job; null while unknown (before the walk) or done."
    )
    stage_eta_seconds = serializers.SerializerMethodField(
        help_text="Seconds left in the current stage; null while unknown."
    )
    waiting = serializers.SerializerMethodField(
        help_text="Why a job that is not working waits, and how many jobs are ahead; else null."
    )

    class Meta:
        model = IndexJob
        fields = [
            "id", "repository_id", "kind", "state", "generation", "commit", "files_total",
            "files_done", "files_skipped", "chunks_total", "chunks_embedded", "summaries_total",
            "summaries_done", "bytes_fetched",
            "stage_timings", "failures", "skipped_files", "attempts", "error", "heartbeat_at", "created_at",
            "started_at", "finished_at", "duration_seconds", "progress",
            "eta_seconds", "stage_eta_seconds", "waiting",
        ]  # fmt: skip
        read_only_fields = fields

    def get_progress(self, job: IndexJob) -> float:
        """A 0..1 estimate across stages, for progress bars."""
        return job_progress.fraction(job)

    def _estimate(self, job: IndexJob) -> job_progress.Estimate:
        if job.is_finished:
            return job_progress.Estimate(None, None)
        context = cast(dict[str, Any], self.context)
        if "rates" not in context:  # one history query per response
            context["rates"] = job_progress.recent_rates()
        return job_progress.estimate(job, context["rates"])

    def get_eta_seconds(self, job: IndexJob) -> float | None:
        seconds = self._estimate(job).total_seconds
        return None if seconds is None else round(seconds, 1)

    def get_stage_eta_seconds(self, job: IndexJob) -> float | None:
        seconds = self._estimate(job).stage_seconds
        return None if seconds is None else round(seconds, 1)

    @extend_schema_field(WaitingSerializer(allow_null=True))
    def get_waiting(self, job: IndexJob) -> dict[str, Any] | None:
        if job.is_finished:
            return None
        context = cast(dict[str, Any], self.context)
        if "unfinished_jobs" not in context:  # one query per response
            context["unfinished_jobs"] = job_progress.unfinished_jobs()
        found = job_progress.waiting(job, context["unfinished_jobs"])
        return None if found is None else found.as_dict()


# Serialises repositories read by ``indexing.selectors.annotated_repositories`` (their
# ``live_vectors``, ``pending_summary_calls`` and ``current_job``): no query per repository.
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
    behind = serializers.BooleanField(
        read_only=True,
        allow_null=True,
        help_text="The remote's tip (last check or push) is not the indexed commit; null: unknown.",
    )
    visibility_groups = serializers.SerializerMethodField(
        help_text="Groups whose members alone may see it; []: every account."
    )
    branches = serializers.JSONField(
        source="branch_specs", read_only=True, help_text="Branch names and globs asked for."
    )
    indexed_branches = serializers.SerializerMethodField(
        help_text="The branches indexed beside the default one, each with its freshness."
    )

    class Meta:
        model = Repository
        fields = [
            "id", "url", "name", "branch", "status", "error", "last_indexed_commit",
            "last_indexed_at", "file_count", "chunk_count", "embedded_count", "vectors",
            "contextual_summaries", "contextual_summary_calls",
            "vectors_missing", "needs_reembedding",
            "size_bytes", "indexed_bytes", "created_at", "updated_at", "current_job",
            "remote_tip", "last_polled_at", "next_poll_at", "poll_error", "poll_interval_secs",
            "behind", "visibility_groups", "managed_by_file", "branches", "indexed_branches",
        ]  # fmt: skip
        read_only_fields = fields

    def get_indexed_branches(self, repository: Repository) -> list[dict[str, Any]]:
        return indexed_branch_summaries(repository)

    def get_vectors(self, repository: Repository) -> int:
        return int(repository.live_vectors)  # type: ignore[attr-defined]

    def get_vectors_missing(self, repository: Repository) -> int:
        return max(repository.chunk_count - self.get_vectors(repository), 0)

    def get_needs_reembedding(self, repository: Repository) -> bool:
        return repository.status == "ready" and self.get_vectors_missing(repository) > 0

    def get_contextual_summary_calls(self, repository: Repository) -> int:
        return int(repository.pending_summary_calls)  # type: ignore[attr-defined]

    def get_visibility_groups(self, repository: Repository) -> list[str]:
        return visibility_group_names(repository)

    def get_current_job(self, repository: Repository) -> dict[str, Any] | None:
        job: IndexJob | None = repository.current_job  # type: ignore[attr-defined]
        return IndexJobSerializer(job, context=self.context).data if job is not None else None
