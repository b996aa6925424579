"""Adding, re-indexing and deleting repositories — the one path the API and the admin share."""

from __future__ import annotations

import logging
import shutil
import socket

import redis
from django.conf import settings
from django.db import connection, transaction
from rest_framework import status

from indexing.clone_paths import repository_dir
from indexing.enqueue import enqueue_embed, enqueue_fetch
from indexing.git.url_safety import UnsafeRepositoryUrl, check_repository_url
from indexing.models import FINISHED_JOB_STATES, IndexJob, JobKind, JobState, Repository
from indexing.services.locks import LockBusy, repository_lock
from reposearch.api_errors import ApiError

logger = logging.getLogger(__name__)

BRANCH_MAX_LENGTH = 255
DELETE_WAIT_SECS = 30.0


def _clean_branch(branch: str | None) -> str:
    branch = (branch or "").strip()
    if branch.startswith("refs/heads/"):
        branch = branch.removeprefix("refs/heads/")
    invalid = (
        len(branch) > BRANCH_MAX_LENGTH
        or any(ch in branch for ch in " ~^:?*[\\\x7f")
        or any(ord(ch) < 32 for ch in branch)
        or ".." in branch
        or branch.startswith(("-", "/", "."))
        or branch.endswith(("/", ".lock", "."))
        or "//" in branch
        or "@{" in branch
    )
    if branch and invalid:
        raise ApiError(f"{branch[:80]!r} is not a valid branch name", code="invalid_branch")
    return branch


def active_job(repository: Repository) -> IndexJob | None:
    return repository.jobs.exclude(state__in=FINISHED_JOB_STATES).order_by("-created_at").first()


def validate_new_repository(url: str, branch: str | None) -> tuple[str, str, str]:
    """Check a repository to add: URL policy, branch name, duplicate, limit.

    Returns (normalized url, branch, display name); raises ``ApiError`` with the reason.
    """
    branch = _clean_branch(branch)
    try:
        checked = check_repository_url(
            url,
            allow_private_hosts=settings.REPO_SEARCH_ALLOW_PRIVATE_HOSTS,
            allow_local_paths=settings.REPO_SEARCH_ALLOW_LOCAL_PATHS,
            resolve=socket.getaddrinfo,  # looked up per call, so tests can stand in for DNS
        )
    except UnsafeRepositoryUrl as error:
        raise ApiError(
            error.message,
            code="url_refused",
            status_code=status.HTTP_503_SERVICE_UNAVAILABLE
            if error.transient
            else status.HTTP_400_BAD_REQUEST,
        ) from None
    existing = Repository.objects.filter(url=checked.url, branch=branch).first()
    if existing is not None:
        raise ApiError(
            f"this URL and branch are already indexed as '{existing.name}' ({existing.pk})",
            code="duplicate",
            status_code=status.HTTP_409_CONFLICT,
            details={"repository_id": str(existing.pk)},
        )
    limit = settings.REPO_SEARCH_MAX_REPOS
    if Repository.objects.count() >= limit:
        raise ApiError(
            f"the repository limit is reached ({limit}; REPO_SEARCH_MAX_REPOS)",
            code="limit_reached",
            status_code=status.HTTP_409_CONFLICT,
            details={"limit": limit},
        )
    return checked.url, branch, checked.display_name


def add_repository(
    url: str,
    branch: str | None = None,
    name: str | None = None,
    contextual_summaries: bool = False,
) -> IndexJob:
    """Validate, create the repository and its first job, and enqueue it after commit."""
    display = (name or "").strip()
    if len(display) > 200:
        raise ApiError("name is longer than 200 characters", code="invalid_name")
    with transaction.atomic():
        # Serialise adds so the limit and the duplicate checks cannot race.
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(hashtext('reposearch:add_repository'))")
        clean_url, branch, default_name = validate_new_repository(url, branch)
        repository = Repository.objects.create(
            url=clean_url,
            branch=branch,
            name=display or default_name,
            contextual_summaries=contextual_summaries,
        )
        job = IndexJob.objects.create(repository=repository, kind=JobKind.FULL)
        enqueue_fetch(job.pk)
    logger.info("repository=%s job=%s added url=%s", repository.pk, job.pk, clean_url)
    return job


def update_repository(repository: Repository, **changes: object) -> Repository:
    """Rename, or switch contextual summaries on or off (takes effect at the next run)."""
    name = changes.get("name")
    if name is not None:
        name = str(name).strip()
        if not name:
            raise ApiError("name must not be empty", code="invalid_name")
        repository.name = name
    if "contextual_summaries" in changes:
        repository.contextual_summaries = bool(changes["contextual_summaries"])
    repository.save(update_fields=["name", "contextual_summaries", "updated_at"])
    return repository


def reindex_repository(repository: Repository) -> tuple[IndexJob, bool]:
    """Queue a re-index; a request during a run is coalesced into it. Returns (job, created)."""
    with transaction.atomic():
        locked = Repository.objects.select_for_update().get(pk=repository.pk)
        running = active_job(locked)
        if running is not None:
            return running, False
        kind = JobKind.INCREMENTAL if locked.active_generation else JobKind.FULL
        job = IndexJob.objects.create(repository=locked, kind=kind)
        enqueue_fetch(job.pk)
    return job, True


def queue_missing_embeddings() -> list[IndexJob]:
    """Queue a re-embed job for each ready, idle repository that lacks vectors in the current
    embedding space (the model changed, or the model server was down while it was indexed).
    Until those jobs finish, search keeps using the vectors the repository has."""
    from indexing.models import ChunkEmbedding, RepositoryStatus
    from indexing.services.embedding import space_for
    from llm import get_embedder

    space = space_for(get_embedder())
    queued: list[IndexJob] = []
    for repository in Repository.objects.filter(status=RepositoryStatus.READY, chunk_count__gt=0):
        if active_job(repository) is not None:
            continue
        embedded = ChunkEmbedding.objects.filter(
            space=space,
            chunk__repository=repository,
            chunk__generation=repository.active_generation,
        ).count()
        if embedded >= repository.chunk_count:
            continue
        with transaction.atomic():
            job = IndexJob.objects.create(
                repository=repository,
                kind=JobKind.REEMBED,
                commit=repository.last_indexed_commit,
                generation=repository.active_generation,
                chunks_total=repository.chunk_count,
            )
            enqueue_embed(job.pk)
        queued.append(job)
    return queued


def delete_repository(repository: Repository) -> None:
    """Cancel its running job, remove its rows and its files on disk."""
    from reposearch.celery import app

    repository_id = repository.pk
    for job in repository.jobs.exclude(state__in=FINISHED_JOB_STATES):
        if job.celery_task_id:
            app.control.revoke(job.celery_task_id)
        IndexJob.objects.filter(pk=job.pk).update(
            state=JobState.CANCELLED, error="repository deleted"
        )
    # A running stage sees the cancellation at its next heartbeat and lets go of the lock;
    # waiting for that keeps its last writes from racing the deletes below.
    try:
        with repository_lock(repository_id, "delete", wait_seconds=DELETE_WAIT_SECS):
            _delete_rows(repository)
    except (LockBusy, redis.RedisError) as error:
        logger.warning("repository=%s deleted without the lock: %s", repository_id, error)
        _delete_rows(repository)
    shutil.rmtree(repository_dir(repository_id), ignore_errors=True)
    logger.info("repository=%s deleted", repository_id)


def _delete_rows(repository: Repository) -> None:
    with transaction.atomic(), connection.cursor() as cursor:
        # Raw deletes: the ORM would load every chunk to cascade in Python.
        cursor.execute(
            "DELETE FROM indexing_chunkembedding WHERE repository_id = %s", [repository.pk]
        )
        cursor.execute("DELETE FROM indexing_chunk WHERE repository_id = %s", [repository.pk])
        cursor.execute("DELETE FROM indexing_sourcefile WHERE repository_id = %s", [repository.pk])
        repository.delete()
