"""Data of the indexing pipeline: repositories, index jobs, files, chunks and their vectors.

Chunks and files carry a ``generation``: a run writes a new generation next to the live one and
the swap (``Repository.active_generation``) happens in one transaction, so searches always see a
complete version. Vectors live in ``ChunkEmbedding`` keyed by an ``EmbeddingSpace`` (provider +
model + dimension): every vector query filters on one space, so vectors of two models are never
mixed or compared.
"""

from __future__ import annotations

import secrets
import uuid

from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVectorField
from django.db import models

from indexing.source_identity import source_identity


class RepositoryStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    INDEXING = "indexing", "Indexing"
    READY = "ready", "Ready"
    FAILED = "failed", "Failed"


def new_webhook_secret() -> str:
    """A fresh secret for a repository's push webhook (indexing.webhooks)."""
    return secrets.token_urlsafe(32)


class Repository(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    url = models.CharField(max_length=2048, help_text="Clone URL, never with credentials.")
    # The same for every spelling of the URL (indexing.source_identity): the duplicate checks
    # compare it, so another spelling cannot add a repository again. Kept by ``save``.
    source = models.CharField(max_length=2048, blank=True, editable=False, db_index=True)
    name = models.CharField(max_length=200)
    branch = models.CharField(max_length=255, blank=True, help_text="Empty: the remote HEAD.")
    status = models.CharField(
        max_length=16, choices=RepositoryStatus.choices, default=RepositoryStatus.PENDING
    )
    error = models.TextField(blank=True)
    last_indexed_commit = models.CharField(max_length=64, blank=True)
    last_indexed_at = models.DateTimeField(null=True, blank=True)
    active_generation = models.PositiveIntegerField(
        default=0, help_text="The generation searches see; 0 = nothing indexed yet."
    )
    file_count = models.PositiveIntegerField(default=0)
    chunk_count = models.PositiveIntegerField(default=0)
    embedded_count = models.PositiveIntegerField(default=0)
    size_bytes = models.BigIntegerField(default=0, help_text="Bytes fetched from the remote.")
    indexed_bytes = models.BigIntegerField(default=0, help_text="Bytes of text indexed.")
    contextual_summaries = models.BooleanField(
        default=False,
        help_text="Opt-in contextual retrieval: the chat model writes a one-line summary of each "
        "chunk at index time, embedded with it. Costs one model call per chunk.",
    )
    # Freshness (indexing.services.polling, indexing.webhooks): the remote's tip at the last check.
    remote_tip = models.CharField(max_length=64, blank=True)
    last_polled_at = models.DateTimeField(null=True, blank=True)
    next_poll_at = models.DateTimeField(null=True, blank=True)
    poll_error = models.TextField(blank=True)
    poll_failures = models.PositiveIntegerField(default=0)
    poll_interval_secs = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Seconds between checks of the remote; empty: REPO_SEARCH_POLL_INTERVAL_SECS; "
        "0: never.",
    )
    webhook_secret = models.CharField(max_length=64, default=new_webhook_secret)
    # Declarative sets (indexing.repository_sets): added by REPO_SEARCH_REPOS_FILE / sync_repos,
    # so a prune may remove it; repositories added by hand are never pruned.
    managed_by_file = models.BooleanField(
        default=False, help_text="Added by the repository file; `prune: true` may remove it."
    )
    # Many branches (indexing.services.branches): names and globs (``release/*``) indexed beside
    # ``branch`` (the default, whose generation is ``active_generation``); each resolved branch
    # is an ``IndexedBranch``. ``reindex_pending``: a default-branch re-index asked for while
    # another branch's job ran (queued when that job ends).
    branch_specs = models.JSONField(
        default=list, blank=True, help_text="More branches to index: names or globs (release/*)."
    )
    reindex_pending = models.BooleanField(default=False)
    # Visibility (accounts.visibility): no groups = every account; else members of these only.
    visible_to_groups = models.ManyToManyField(
        "auth.Group",
        blank=True,
        related_name="visible_repositories",
        help_text="Empty: visible to every account. Otherwise only to members of these groups.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name", "created_at"]
        verbose_name_plural = "repositories"
        constraints = [
            models.UniqueConstraint(fields=["url", "branch"], name="unique_repository_url_branch"),
        ]

    def __str__(self) -> str:
        return self.name

    def save(self, *args: object, **kwargs: object) -> None:
        self.source = source_identity(self.url)
        update_fields = kwargs.get("update_fields")
        if update_fields is not None and "url" in update_fields:  # type: ignore[operator]
            kwargs["update_fields"] = {*update_fields, "source"}  # type: ignore[misc]
        super().save(*args, **kwargs)  # type: ignore[arg-type]

    @property
    def vectors_missing(self) -> int:
        return max(self.chunk_count - self.embedded_count, 0)

    @property
    def behind(self) -> bool | None:
        """True when the remote's tip moved past the indexed commit; None while unknown."""
        if not self.remote_tip or not self.last_indexed_commit:
            return None
        return self.remote_tip != self.last_indexed_commit


class SwapPosition(models.Model):
    """Where the primary's write-ahead log stood once a repository's last generation swap (of
    any of its branches) had committed, as a number (``pg_lsn - '0/0'``): a read replica that
    has replayed past it holds every row a search of the repository reads
    (search.retrieval.replicas). Empty while a swap's transaction is open, until it is recorded
    after the commit. Its own table, written only by updates: a ``Repository`` saved from a
    stale copy cannot set it back."""

    repository = models.OneToOneField(
        Repository, on_delete=models.CASCADE, primary_key=True, related_name="swap_position"
    )
    lsn = models.BigIntegerField(null=True)

    def __str__(self) -> str:
        return f"{self.repository_id}: {self.lsn}"


class IndexedBranch(models.Model):
    """A branch indexed beside the repository's default one, with its own live generation.

    Its generation's rows are the files (and their chunks) it owns (``SourceFile.generation``)
    plus those it shares with other generations of the repository (``SharedFile``): content
    already stored for another branch is referenced, never stored twice. The default branch
    lives on ``Repository`` itself (``branch``, ``active_generation``) and always owns its rows.
    """

    repository = models.ForeignKey(
        Repository, on_delete=models.CASCADE, related_name="indexed_branches"
    )
    name = models.CharField(max_length=255)
    generation = models.PositiveIntegerField(default=0, help_text="0 = not indexed yet.")
    last_indexed_commit = models.CharField(max_length=64, blank=True)
    last_indexed_at = models.DateTimeField(null=True, blank=True)
    file_count = models.PositiveIntegerField(default=0)
    chunk_count = models.PositiveIntegerField(default=0)
    shared_file_count = models.PositiveIntegerField(
        default=0, help_text="Files of its generation stored once for another branch."
    )
    remote_tip = models.CharField(max_length=64, blank=True)
    error = models.TextField(blank=True)
    pending = models.BooleanField(default=False, help_text="A re-index waits for the running job.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["repository", "name"], name="unique_indexed_branch"),
        ]

    def __str__(self) -> str:
        return f"{self.repository_id}@{self.name}"


class SharedFile(models.Model):
    """Generation ``generation`` of the repository also includes ``file`` (owned by another
    generation, whose chunks are therefore stored once)."""

    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="+")
    generation = models.PositiveIntegerField()
    file = models.ForeignKey("SourceFile", on_delete=models.CASCADE, related_name="shared_with")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["generation", "file"], name="unique_shared_file"),
        ]
        indexes = [models.Index(fields=["repository", "generation"], name="shared_repo_gen")]

    def __str__(self) -> str:
        return f"{self.file_id} in generation {self.generation}"


class RepositoryFileState(models.Model):
    """What the file-change check last saw of a repository file (indexing.repository_sets)."""

    path = models.CharField(max_length=1024, unique=True)
    mtime_ns = models.BigIntegerField(default=0)
    size = models.BigIntegerField(default=0)
    sha256 = models.CharField(max_length=64, blank=True)
    checked_at = models.DateTimeField(null=True, blank=True)
    applied_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True, help_text="Why the last version was not applied.")

    def __str__(self) -> str:
        return self.path


class JobKind(models.TextChoices):
    FULL = "full", "Full"
    INCREMENTAL = "incremental", "Incremental"
    REEMBED = "reembed", "Re-embed (vectors missing for the current embedding model)"


class JobState(models.TextChoices):
    QUEUED = "queued", "Queued"
    CLONING = "cloning", "Cloning"
    WALKING = "walking", "Walking"
    CHUNKING = "chunking", "Chunking"
    STORING = "storing", "Storing"
    EMBEDDING = "embedding", "Embedding"
    DONE = "done", "Done"
    COMPLETED_WITH_ERRORS = "completed_with_errors", "Completed with errors"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


FINISHED_JOB_STATES = frozenset(
    {JobState.DONE, JobState.COMPLETED_WITH_ERRORS, JobState.FAILED, JobState.CANCELLED}
)


class IndexJob(models.Model):
    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="jobs")
    branch = models.ForeignKey(
        IndexedBranch,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="jobs",
        help_text="The indexed branch this job indexes; empty: the default branch.",
    )
    kind = models.CharField(max_length=16, choices=JobKind.choices, default=JobKind.FULL)
    state = models.CharField(max_length=24, choices=JobState.choices, default=JobState.QUEUED)
    generation = models.PositiveIntegerField(default=0)
    commit = models.CharField(max_length=64, blank=True)
    files_total = models.PositiveIntegerField(default=0)
    files_done = models.PositiveIntegerField(default=0)
    files_skipped = models.PositiveIntegerField(default=0)
    chunks_total = models.PositiveIntegerField(default=0)
    chunks_embedded = models.PositiveIntegerField(default=0)
    chunks_reused = models.PositiveIntegerField(
        default=0, help_text="Of chunks_embedded: pointed at a vector computed before (no model)."
    )
    summaries_total = models.PositiveIntegerField(
        default=0, help_text="Chat calls this job makes for contextual summaries (its cost)."
    )
    summaries_done = models.PositiveIntegerField(default=0)
    bytes_fetched = models.BigIntegerField(default=0)
    stage_timings = models.JSONField(default=dict, blank=True, help_text="Seconds per stage.")
    failures = models.JSONField(
        default=list, blank=True, help_text="Files or batches that failed, with the reason."
    )
    skipped_files = models.JSONField(
        default=list,
        blank=True,
        help_text="Paths the walk left out, with the reason (the first 200; files_skipped counts all).",
    )
    stage_started_at = models.DateTimeField(
        null=True, blank=True, help_text="When the job entered its current state (time estimates)."
    )
    slice_started_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When the running slice of embedding began; empty between slices (estimates).",
    )
    celery_task_id = models.CharField(max_length=64, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    resumes = models.PositiveIntegerField(
        default=0, help_text="Times the stage's task was sent again after its worker lost it."
    )
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["state", "heartbeat_at"], name="indexjob_state_heartbeat")]

    def __str__(self) -> str:
        return f"{self.repository.name}: {self.kind} job #{self.pk} ({self.get_state_display()})"

    @property
    def is_finished(self) -> bool:
        return self.state in FINISHED_JOB_STATES

    @property
    def duration_seconds(self) -> float | None:
        if self.started_at is None:
            return None
        end = self.finished_at
        if end is None:
            from django.utils import timezone

            end = timezone.now()
        return (end - self.started_at).total_seconds()


class SourceFile(models.Model):
    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="files")
    generation = models.PositiveIntegerField()
    path = models.CharField(max_length=1024)
    language = models.CharField(max_length=32, blank=True)
    blob_sha = models.CharField(max_length=64)
    size_bytes = models.PositiveIntegerField(default=0)
    line_count = models.PositiveIntegerField(default=0)
    is_test = models.BooleanField(default=False)
    is_doc = models.BooleanField(default=False)

    class Meta:
        ordering = ["path"]
        constraints = [
            models.UniqueConstraint(
                fields=["repository", "generation", "path"], name="unique_file_per_generation"
            ),
        ]
        indexes = [models.Index(fields=["repository", "generation"], name="file_repo_gen")]

    def __str__(self) -> str:
        return self.path


class Chunk(models.Model):
    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="chunks")
    file = models.ForeignKey(SourceFile, on_delete=models.CASCADE, related_name="chunks")
    generation = models.PositiveIntegerField()
    index = models.PositiveIntegerField(help_text="Position of the chunk within its file.")
    start_line = models.PositiveIntegerField()
    end_line = models.PositiveIntegerField()
    symbol = models.CharField(max_length=512, blank=True)
    symbol_name = models.CharField(
        max_length=256, blank=True, help_text="Last part of the symbol (Class.method -> method)."
    )
    kind = models.CharField(max_length=32, blank=True)
    language = models.CharField(max_length=32, blank=True)
    path = models.CharField(max_length=1024, help_text="Copy of the file path for ranking.")
    is_test = models.BooleanField(default=False)
    is_doc = models.BooleanField(default=False)
    content = models.TextField()
    content_hash = models.CharField(max_length=64, help_text="sha256 of the content.")
    calls = models.JSONField(default=list, blank=True, help_text="Names called in this chunk.")
    summary = models.TextField(
        blank=True,
        default="",
        db_default="",  # bulk inserts in raw SQL leave it out
        help_text="One-line summary by the chat model (contextual retrieval).",
    )
    search_vector = SearchVectorField(null=True)
    token_count = models.PositiveIntegerField(default=0, help_text="Words in the tsvector text.")

    class Meta:
        ordering = ["file_id", "index"]
        indexes = [
            GinIndex(fields=["search_vector"], name="chunk_search_vector_gin"),
            models.Index(fields=["repository", "generation"], name="chunk_repo_gen"),
            models.Index(fields=["content_hash"], name="chunk_content_hash"),
            models.Index(fields=["repository", "symbol"], name="chunk_repo_symbol"),
            models.Index(fields=["repository", "symbol_name"], name="chunk_repo_symbol_name"),
            GinIndex(fields=["calls"], name="chunk_calls_gin"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(start_line__gte=1)
                & models.Q(end_line__gte=models.F("start_line")),
                name="chunk_line_range_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.path}:{self.start_line}-{self.end_line}"


# The vectors' models live in their own module; imported here so Django and callers find them
# in ``indexing.models`` as before.
from indexing.embedding_models import ChunkEmbedding as ChunkEmbedding  # noqa: E402
from indexing.embedding_models import EmbeddingSpace as EmbeddingSpace  # noqa: E402
from indexing.embedding_models import EmbeddingVector as EmbeddingVector  # noqa: E402
