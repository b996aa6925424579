"""Which branches a repository indexes beside its default one, and their jobs.

A repository lists branch names and globs (``release/*``) in ``branch_specs``; globs are
matched against the remote's branches (its ref advertisement only). Every resolved branch is
an ``IndexedBranch``; together with the default branch they are capped at
``REPO_SEARCH_MAX_BRANCHES`` (names as listed first, then glob matches in name order).

One job runs per repository at a time (they share the clone and the repository lock): a
branch's re-index asked for while another job runs is marked pending and queued when that job
ends (``queue_next_branch``, called at the end of every job), the default branch first.
Branches wait for the default branch's first index (its clone is theirs too).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from fnmatch import fnmatchcase
from uuid import UUID

from django.conf import settings
from django.db import transaction

from indexing.enqueue import enqueue_fetch
from indexing.exceptions import InvalidRepositoryInput
from indexing.git.branch_names import branch_name_problem
from indexing.models import FINISHED_JOB_STATES, IndexedBranch, IndexJob, JobKind, Repository

logger = logging.getLogger(__name__)

GLOB_CHARACTERS = frozenset("*?")
SPEC_MAX_LENGTH = 255


def is_glob(spec: str) -> bool:
    return any(char in GLOB_CHARACTERS for char in spec)


def _refused(message: str) -> InvalidRepositoryInput:
    return InvalidRepositoryInput("invalid_branches", message, {"field": "branches"})


def clean_branch_specs(specs: object) -> list[str]:
    """Branch names and globs as given (``refs/heads/`` dropped, duplicates once), or
    ``InvalidRepositoryInput`` naming the first bad one."""
    if not isinstance(specs, list | tuple) or not all(isinstance(s, str) for s in specs):
        raise _refused("branches must be a list of branch names or globs (release/*)")
    cleaned: list[str] = []
    for raw in specs:
        spec = raw.strip().removeprefix("refs/heads/")
        # A glob's other characters must make a valid name: only * and ? are wildcards.
        probe = "".join("x" if char in GLOB_CHARACTERS else char for char in spec)
        problem = (
            f"it is longer than {SPEC_MAX_LENGTH} characters"
            if len(spec) > SPEC_MAX_LENGTH
            else branch_name_problem(probe)
        )
        if problem:
            raise _refused(f"{spec[:80]!r} is not a valid branch name or glob: {problem}")
        cleaned.append(spec)
    cleaned = list(dict.fromkeys(cleaned))
    limit = settings.REPO_SEARCH_MAX_BRANCHES
    names = [spec for spec in cleaned if not is_glob(spec)]
    if len(names) > limit - 1:
        raise _refused(
            f"at most {limit - 1} branches besides the default one"
            f" (REPO_SEARCH_MAX_BRANCHES={limit}); {len(names)} were listed"
        )
    return cleaned


def branches_matching(
    specs: Sequence[str], remote_names: Sequence[str], default: str
) -> tuple[list[str], list[str]]:
    """(branches to index, branches left out by the cap) for ``specs``; the default branch
    is never among them (it is always indexed)."""
    names: list[str] = []
    for spec in specs:
        if is_glob(spec):
            names += sorted(name for name in remote_names if fnmatchcase(name, spec))
        else:
            names.append(spec)
    names = [name for name in dict.fromkeys(names) if name != default]
    room = max(settings.REPO_SEARCH_MAX_BRANCHES - 1, 0)
    return names[:room], names[room:]


def remote_branch_names(repository: Repository) -> list[str]:
    """The remote's branch names, from its ref advertisement (no pack is fetched)."""
    from indexing.git.remote_refs import remote_branches

    return remote_branches(
        repository.url,
        timeout_s=30.0,
        allow_private_hosts=settings.REPO_SEARCH_ALLOW_PRIVATE_HOSTS,
        allow_local_paths=settings.REPO_SEARCH_ALLOW_LOCAL_PATHS,
        token=settings.REPO_SEARCH_GIT_TOKEN,
        token_hosts=settings.REPO_SEARCH_GIT_TOKEN_HOSTS,
    )


def set_branches(
    repository: Repository,
    specs: object,
    *,
    list_remote: Callable[[Repository], list[str]] = remote_branch_names,
) -> list[str]:
    """Index the branches ``specs`` name (beside the default); stop indexing the others.

    New branches are queued (after the running job, if any); a branch no longer listed is
    deleted with ``delete_branch`` (rows another branch uses stay). Returns the branch names
    the cap left out. A glob needs the remote's branch list: a remote that cannot be reached
    raises its ``GitFetchError``, and nothing changes.
    """
    cleaned = clean_branch_specs(specs)
    remote = list_remote(repository) if any(is_glob(spec) for spec in cleaned) else []
    kept, left_out = branches_matching(cleaned, remote, repository.branch)
    with transaction.atomic():
        Repository.objects.filter(pk=repository.pk).update(branch_specs=cleaned)
        repository.branch_specs = cleaned
        existing = {b.name: b for b in repository.indexed_branches.all()}
        for name in kept:
            if name not in existing:
                IndexedBranch.objects.create(repository=repository, name=name, pending=True)
        gone = [branch for name, branch in existing.items() if name not in kept]
    for branch in gone:
        delete_branch(branch)
    if left_out:
        logger.warning(
            "repository=%s branches left out by REPO_SEARCH_MAX_BRANCHES: %s",
            repository.pk,
            left_out,
        )
    queue_next_branch(repository.pk)
    return left_out


def match_branch_globs(repository_id: UUID) -> None:
    """Match the repository's globs against the remote's branches again (after the default
    branch's index); a remote that cannot be listed now is left to the next poll."""
    from indexing.git.errors import GitFetchError

    repository = Repository.objects.filter(pk=repository_id).first()
    if repository is None or not any(is_glob(spec) for spec in repository.branch_specs):
        return
    try:
        set_branches(repository, repository.branch_specs)
    except GitFetchError as error:
        logger.warning("repository=%s branch globs not matched: %s", repository_id, error)


def _active_job(repository: Repository) -> IndexJob | None:
    return repository.jobs.exclude(state__in=FINISHED_JOB_STATES).order_by("-created_at").first()


def reindex_branch(repository: Repository, branch: IndexedBranch) -> tuple[IndexJob | None, bool]:
    """Queue a re-index of one branch: (its job, True), or (the running job, False) when a job
    runs (the branch's own is coalesced; another's makes this one pending, queued after it)."""
    with transaction.atomic():
        locked = Repository.objects.select_for_update().get(pk=repository.pk)
        running = _active_job(locked)
        if running is not None:
            if running.branch_id != branch.pk:
                IndexedBranch.objects.filter(pk=branch.pk).update(pending=True)
            return running, False
        if not locked.active_generation:  # the default branch's first index comes first
            IndexedBranch.objects.filter(pk=branch.pk).update(pending=True)
            return None, False
        IndexedBranch.objects.filter(pk=branch.pk).update(pending=False)
        job = IndexJob.objects.create(
            repository=locked,
            branch=branch,
            kind=JobKind.INCREMENTAL if branch.generation else JobKind.FULL,
        )
        enqueue_fetch(job.pk)
    return job, True


def queue_next_branch(repository_id: UUID) -> IndexJob | None:
    """When no job runs: queue the default branch's pending re-index, else the first pending
    branch's. Called when a job ends, so pending re-indexes run one after another."""
    with transaction.atomic():
        repository = Repository.objects.select_for_update().filter(pk=repository_id).first()
        if repository is None or _active_job(repository) is not None:
            return None
        if repository.reindex_pending:
            Repository.objects.filter(pk=repository.pk).update(reindex_pending=False)
            kind = JobKind.INCREMENTAL if repository.active_generation else JobKind.FULL
            job = IndexJob.objects.create(repository=repository, kind=kind)
            enqueue_fetch(job.pk)
            return job
        if not repository.active_generation:
            return None
        # The remote HEAD resolved to a branch also listed: the default already covers it.
        repository.indexed_branches.filter(name=repository.branch, generation=0).delete()
        branch = (
            repository.indexed_branches.filter(pending=True)
            .exclude(name=repository.branch)
            .order_by("name")
            .first()
        )
        if branch is None:
            return None
        IndexedBranch.objects.filter(pk=branch.pk).update(pending=False)
        job = IndexJob.objects.create(
            repository=repository,
            branch=branch,
            kind=JobKind.INCREMENTAL if branch.generation else JobKind.FULL,
        )
        enqueue_fetch(job.pk)
    logger.info("repository=%s queued branch=%s job=%s", repository.pk, branch.name, job.pk)
    return job


def delete_branch(branch: IndexedBranch) -> None:
    """Stop indexing ``branch``: cancel its job, retire its generation (rows another branch
    still uses stay, owned by that branch from now on) and remove it."""
    from indexing.models import JobState
    from indexing.services.branch_generations import drop_branch_rows
    from indexing.services.locks import LockBusy, repository_lock
    from reposearch.celery import app

    for job in branch.jobs.exclude(state__in=FINISHED_JOB_STATES):
        if job.celery_task_id:
            app.control.revoke(job.celery_task_id)
        IndexJob.objects.filter(pk=job.pk).update(state=JobState.CANCELLED, error="branch deleted")
    try:
        with repository_lock(branch.repository_id, "delete-branch", wait_seconds=30.0):
            drop_branch_rows(branch)
    except LockBusy as error:
        logger.warning("branch=%s deleted without the lock: %s", branch.pk, error)
        drop_branch_rows(branch)
    branch.delete()
    logger.info("repository=%s branch=%s deleted", branch.repository_id, branch.name)
