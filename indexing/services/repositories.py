"""Adding, re-indexing and deleting repositories — the one path the API and the admin share.

Refusals are ``indexing.exceptions.RepositoryRefused`` subclasses, never HTTP errors.
"""

from __future__ import annotations

import logging
import shutil
import socket
from collections.abc import Sequence

import redis
from django.conf import settings
from django.db import connection, transaction
from django.db.models import QuerySet

from accounts.visibility import Viewer
from indexing.clone_paths import remove_stale_staging, repository_dir
from indexing.enqueue import enqueue_embed, enqueue_fetch
from indexing.exceptions import (
    DuplicateRepository,
    InvalidRepositoryInput,
    RepositoryCheckUnavailable,
    RepositoryLimitReached,
)
from indexing.git.branch_names import branch_name_problem
from indexing.git.url_safety import UnsafeRepositoryUrl, check_repository_url
from indexing.models import FINISHED_JOB_STATES, IndexJob, JobKind, JobState, Repository
from indexing.services.locks import LockBusy, repository_lock
from indexing.services.visibility import groups_named
from indexing.source_identity import source_identity
from indexing.visible import visible_repositories

logger = logging.getLogger(__name__)

BRANCH_MAX_LENGTH = 255
DELETE_WAIT_SECS = 30.0


def clean_branch(branch: str | None) -> str:
    branch = (branch or "").strip()
    if branch.startswith("refs/heads/"):
        branch = branch.removeprefix("refs/heads/")
    if not branch:
        return ""
    problem = (
        f"it is longer than {BRANCH_MAX_LENGTH} characters"
        if len(branch) > BRANCH_MAX_LENGTH
        else branch_name_problem(branch)
    )
    if problem:
        raise InvalidRepositoryInput(
            "invalid_branch",
            f"{branch[:80]!r} is not a valid branch name: {problem}",
            {"field": "branch"},
        )
    return branch


def same_source(url: str) -> QuerySet[Repository]:
    """Repositories of the same source as ``url``, whatever the spelling of either (scheme,
    case, ``.git``, slashes, a local path's ``/.git``: ``indexing.source_identity``), oldest
    first."""
    return Repository.objects.filter(source=source_identity(url)).order_by("created_at")


def find_duplicate(url: str, branch: str) -> Repository | None:
    """An existing copy of the same source and branch, or one that may turn out to be it.

    Without a branch, the remote's default branch is meant; any copy of that source may be it
    (its branch was resolved from the default, or is not known yet), so any copy counts: name a
    branch to index a second one. With a branch, a copy with that branch counts. (A copy still
    learning its default branch may resolve to one added meanwhile; its fetch then fails with
    a message naming the other copy, see ``default_branch_taken``.)
    """
    copies = same_source(url)
    if not branch:
        return copies.first()
    return copies.filter(branch=branch).first()


def restricted_copy(url: str) -> Repository | None:
    """The oldest copy of ``url``'s source that is restricted to groups, if any: a new branch
    of it is a branch of a restricted repository and takes its visibility."""
    return same_source(url).filter(visible_to_groups__isnull=False).distinct().first()


HIDDEN_DUPLICATE = (
    "this repository cannot be added by you: ask an administrator to add it or to give you access"
)


def _duplicate(
    existing: Repository, branch: str, viewer: Viewer | None, *, new_branch: bool = False
) -> DuplicateRepository:
    """The refusal of a repository already indexed as ``existing``; one the viewer may not
    see is refused in the same words whatever it is (no name, id, branch or groups)."""
    if not _sees(viewer, existing):
        return DuplicateRepository("duplicate", HIDDEN_DUPLICATE)
    details = {"repository_id": str(existing.pk), "branch": existing.branch}
    if new_branch:
        return DuplicateRepository(
            "duplicate",
            f"this repository is already indexed as '{existing.name}' (id {existing.pk}), "
            f"restricted to groups: to index branch {branch} too, add it to that "
            "repository's branches, where it keeps the repository's visibility",
            {**details, "add_branch": branch},
        )
    shown = f"branch {existing.branch}" if existing.branch else "its default branch"
    return DuplicateRepository(
        "duplicate",
        f"this repository is already indexed as '{existing.name}' ({shown}, id {existing.pk})"
        + ("" if branch else "; name a branch to index another one"),
        details,
    )


def default_branch_taken(repository: Repository, branch: str) -> str:
    """Why ``repository`` cannot take ``branch`` (its resolved default), or "" when it can."""
    other = same_source(repository.url).filter(branch=branch).exclude(pk=repository.pk).first()
    if other is None:
        return ""
    if other.visible_to_groups.exists():  # the job's readers may not see it: do not name it
        return (
            f"the default branch {branch} of this URL is already indexed in a restricted "
            "repository; delete this copy"
        )
    return (
        f"the default branch {branch} of this URL is already indexed as '{other.name}' "
        f"({other.pk}); delete this copy"
    )


def _sees(viewer: Viewer | None, repository: Repository) -> bool:
    if _sees_everything(viewer):
        return True
    assert viewer is not None
    return visible_repositories(viewer).filter(pk=repository.pk).exists()


def _sees_everything(viewer: Viewer | None) -> bool:
    """An administrator, a command or the repository file: they decide visibility."""
    return viewer is None or viewer.sees_everything


def checked_url(url: str) -> tuple[str, str]:
    """``url`` normalised under the URL policy, and its display name; raises ``RepositoryRefused``."""
    try:
        checked = check_repository_url(
            url,
            allow_private_hosts=settings.REPO_SEARCH_ALLOW_PRIVATE_HOSTS,
            allow_local_paths=settings.REPO_SEARCH_ALLOW_LOCAL_PATHS,
            resolve=socket.getaddrinfo,  # looked up per call, so tests can stand in for DNS
        )
    except UnsafeRepositoryUrl as error:
        refused = RepositoryCheckUnavailable if error.transient else InvalidRepositoryInput
        raise refused("url_refused", error.message, {"field": "url"}) from None
    return checked.url, checked.display_name


def active_job(repository: Repository) -> IndexJob | None:
    return repository.jobs.exclude(state__in=FINISHED_JOB_STATES).order_by("-created_at").first()


def validate_new_repository(
    url: str, branch: str | None, viewer: Viewer | None = None
) -> tuple[str, str, str]:
    """Check a repository to add: URL policy, branch name, duplicate, limit.

    Returns (normalized url, branch, display name); raises ``RepositoryRefused`` with the reason.
    A duplicate is the same source (any spelling of its URL) and branch. Another branch of a
    restricted repository is refused too unless ``viewer`` sees everything (an administrator,
    whose copy then takes that repository's groups): a writer adds it to that repository's
    branches instead, so it cannot become a public copy. A repository ``viewer`` may not see
    is refused without its name, id or branch (default viewer: sees everything).
    """
    branch = clean_branch(branch)
    clean_url, display_name = checked_url(url)
    existing = find_duplicate(clean_url, branch)
    if existing is not None:
        raise _duplicate(existing, branch, viewer)
    restricted = restricted_copy(clean_url)
    if restricted is not None and not _sees_everything(viewer):
        raise _duplicate(restricted, branch, viewer, new_branch=True)
    limit = settings.REPO_SEARCH_MAX_REPOS
    if Repository.objects.count() >= limit:
        raise RepositoryLimitReached(
            "limit_reached",
            f"the repository limit is reached ({limit}; REPO_SEARCH_MAX_REPOS)",
            {"limit": limit},
        )
    return clean_url, branch, display_name


def add_repository(
    url: str,
    branch: str | None = None,
    name: str | None = None,
    contextual_summaries: bool = False,
    visibility_groups: Sequence[str] | None = None,
    viewer: Viewer | None = None,
    poll_interval_secs: int | None = None,
    managed_by_file: bool = False,
    branches: Sequence[str] | None = None,
) -> IndexJob:
    """Validate, create the repository and its first job, and enqueue it after commit.

    ``visibility_groups`` (names of existing groups; for a writer, groups they are in)
    restricts it to their members; without them, another branch of a restricted repository
    takes that repository's groups. ``viewer`` is who adds it (for the duplicate check and the
    groups; default: the admin's all-seeing view).
    ``managed_by_file``: added by the repository file (``indexing.repository_sets``)."""
    from indexing.models import IndexedBranch
    from indexing.services.branches import clean_branch_specs, is_glob

    among = None if viewer is None or viewer.sees_everything else viewer.group_ids
    groups = groups_named(visibility_groups, among) if visibility_groups else []
    specs = clean_branch_specs(list(branches)) if branches else []
    display = (name or "").strip()
    if len(display) > 200:
        raise InvalidRepositoryInput(
            "invalid_name", "name is longer than 200 characters", {"field": "name"}
        )
    with transaction.atomic():
        # Serialise adds so the limit and the duplicate checks cannot race.
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(hashtext('reposearch:add_repository'))")
        clean_url, branch, default_name = validate_new_repository(url, branch, viewer)
        restricted = restricted_copy(clean_url)
        if not groups and restricted is not None:
            # Another branch of a restricted repository: restricted alike, unless its groups
            # were chosen (only an administrator's add gets here, see validate_new_repository).
            groups = list(restricted.visible_to_groups.all())
        repository = Repository.objects.create(
            url=clean_url,
            branch=branch,
            name=display or default_name,
            contextual_summaries=contextual_summaries,
            poll_interval_secs=poll_interval_secs,
            managed_by_file=managed_by_file,
            branch_specs=specs,
        )
        if groups:
            repository.visible_to_groups.set(groups)
        # Named branches wait for the default's first index; globs are matched when it ends.
        for spec in specs[: settings.REPO_SEARCH_MAX_BRANCHES - 1]:
            if not is_glob(spec) and spec != branch:
                IndexedBranch.objects.create(repository=repository, name=spec, pending=True)
        job = IndexJob.objects.create(repository=repository, kind=JobKind.FULL)
        enqueue_fetch(job.pk)
    logger.info("repository=%s job=%s added url=%s", repository.pk, job.pk, clean_url)
    return job


def update_repository(repository: Repository, **changes: object) -> Repository:
    """Rename, switch contextual summaries on or off (takes effect at the next run), set the
    poll interval, set ``visibility_groups`` (names of groups; []: every account), or set the
    ``branches`` indexed beside the default one (``indexing.services.branches``)."""
    if changes.get("branches") is not None:
        from indexing.git.errors import GitFetchError
        from indexing.services.branches import set_branches

        try:
            set_branches(repository, changes["branches"])
        except GitFetchError as error:
            raise RepositoryCheckUnavailable(
                "remote_unavailable",
                f"the remote's branches could not be listed to match the globs: {error.message}",
                {"field": "branches"},
            ) from error
    if changes.get("visibility_groups") is not None:
        groups = groups_named(list(changes["visibility_groups"]))  # type: ignore[call-overload]
        repository.visible_to_groups.set(groups)
    name = changes.get("name")
    if name is not None:
        name = str(name).strip()
        if not name:
            raise InvalidRepositoryInput(
                "invalid_name", "name must not be empty", {"field": "name"}
            )
        repository.name = name
    if "contextual_summaries" in changes:
        repository.contextual_summaries = bool(changes["contextual_summaries"])
    fields = ["name", "contextual_summaries", "updated_at"]
    if "poll_interval_secs" in changes:  # polling: the new interval counts from now
        interval = changes["poll_interval_secs"]
        repository.poll_interval_secs = None if interval is None else int(str(interval))
        repository.next_poll_at = None
        fields += ["poll_interval_secs", "next_poll_at"]
    repository.save(update_fields=fields)
    return repository


def reindex_repository(repository: Repository) -> tuple[IndexJob, bool]:
    """Queue a re-index; a request during a run is coalesced into it. Returns (job, created)."""
    with transaction.atomic():
        locked = Repository.objects.select_for_update().get(pk=repository.pk)
        running = active_job(locked)
        if running is not None:
            if running.branch_id is not None:  # another branch's job: the default's comes next
                Repository.objects.filter(pk=locked.pk).update(reindex_pending=True)
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
    from indexing.services.vectors import space_for
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
    clone = repository_dir(repository_id)
    shutil.rmtree(clone, ignore_errors=True)
    remove_stale_staging(clone)  # what its killed fetches left (a live fetch removes its own)
    logger.info("repository=%s deleted", repository_id)


def _delete_rows(repository: Repository) -> None:
    with transaction.atomic(), connection.cursor() as cursor:
        # Raw deletes: the ORM would load every chunk to cascade in Python.
        cursor.execute(
            "DELETE FROM indexing_chunkembedding WHERE repository_id = %s", [repository.pk]
        )
        cursor.execute("DELETE FROM indexing_chunk WHERE repository_id = %s", [repository.pk])
        cursor.execute("DELETE FROM indexing_sharedfile WHERE repository_id = %s", [repository.pk])
        cursor.execute("DELETE FROM indexing_sourcefile WHERE repository_id = %s", [repository.pk])
        repository.delete()
