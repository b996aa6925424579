"""The fetch stage: bring the repository's branch into its clone directory, fenced.

The fetch writes into a staging directory of its own and only a run that still holds its claim
on the job moves it into place, in the same transaction that records the commit
(``clone_swap``). So two workers, on one host or several, never write the same clone: a run
that lost its claim (its worker paused or cut off past the repository lock's TTL, its job
resumed elsewhere, or failed by the reaper) neither swaps its clone in, nor records a commit,
nor retries or fails the job when it comes back.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction

from indexing.clone_paths import repository_dir
from indexing.git.ancestry import is_ancestor
from indexing.git.errors import GitFetchError
from indexing.git.fetch import FetchResult, fetch_branch, fetch_update
from indexing.models import IndexedBranch, IndexJob, JobState, Repository, RepositoryStatus
from indexing.services import jobs
from indexing.services.locks import clone_slot
from indexing.services.repositories import default_branch_taken
from indexing.services.stages import clone_budget
from indexing.services.stages.claims import StageClaim, drop_late_delivery
from indexing.services.stages.clone_swap import copy_for_update, move_into_place, staging_area
from indexing.services.stages.run_context import (
    TransientFailure,
    check_alive,
    fail_job,
    load_run,
    record_timing,
)


@dataclass(frozen=True)
class FetchLimits:
    """The operator's limits and credentials, passed to every fetch."""

    max_bytes: int
    timeout_s: float
    allow_private_hosts: bool
    allow_local_paths: bool
    token: str | None
    token_hosts: list[str]
    depth: int | None  # commits of history (None: all)

    def as_kwargs(self) -> dict[str, Any]:
        return dict(self.__dict__)


def directory_size(path: Path) -> int:
    return sum(item.stat().st_size for item in path.rglob("*") if item.is_file())


def _limits(job: IndexJob) -> FetchLimits:
    return FetchLimits(
        max_bytes=settings.REPO_SEARCH_MAX_REPO_SIZE_MB * 1024 * 1024,
        timeout_s=clone_budget.seconds_left(job),  # what earlier attempts left of the deadline
        allow_private_hosts=settings.REPO_SEARCH_ALLOW_PRIVATE_HOSTS,
        allow_local_paths=settings.REPO_SEARCH_ALLOW_LOCAL_PATHS,
        token=settings.REPO_SEARCH_GIT_TOKEN,
        token_hosts=settings.REPO_SEARCH_GIT_TOKEN_HOSTS,
        depth=settings.REPO_SEARCH_HISTORY_DEPTH or None,
    )


def _fail(job: IndexJob, claim: StageClaim, message: str) -> bool:
    """End the job, unless this run lost its claim (then ``JobCancelled``: it says nothing)."""
    with transaction.atomic():
        claim.check()
        fail_job(job, message)
    return False


def _fetch_into(
    staging: Path, target: Path, repository: Repository, limits: FetchLimits, branch: str
) -> FetchResult:
    """``branch`` (empty: the default) into a copy of the clone, or a fresh clone. Every
    indexed branch's tip lives in the one clone, so one branch's update keeps the others'."""
    # Each incremental fetch adds a pack; past the size limit, start from a fresh clone.
    usable = (
        (repository.active_generation or branch != repository.branch)
        and (target / "HEAD").exists()
        and directory_size(target) < limits.max_bytes
    )
    if usable and branch:
        copy_for_update(target, staging)
        return fetch_update(staging, repository.url, branch, **limits.as_kwargs())
    return fetch_branch(repository.url, staging, branch=branch or None, **limits.as_kwargs())


def run_fetch(job_id: int, *, task_id: str = "", final_attempt: bool = True) -> bool:
    """Fetch the repository's branch. True when the index stage should run next."""
    context = load_run(job_id)
    if context is None:
        return False
    job, repository = context.job, context.repository
    if drop_late_delivery(job, "fetch"):
        return False
    if job.state != JobState.QUEUED:
        job = jobs.transition(job, JobState.QUEUED)  # a retry after a crash: start over
    job = jobs.transition(job, JobState.CLONING, celery_task_id=task_id, attempts=job.attempts + 1)
    claim = StageClaim.of(job)  # the fencing token: an earlier run of the job writes no more
    default = job.branch_id is None
    branch = job.branch.name if job.branch is not None else repository.branch
    if default:
        Repository.objects.filter(pk=repository.pk).update(
            status=RepositoryStatus.INDEXING
            if repository.active_generation == 0
            else repository.status
        )
    started = time.monotonic()
    if clone_budget.seconds_left(job) < clone_budget.MIN_ATTEMPT_SECS:
        return _fail(job, claim, clone_budget.exhausted_message(job))
    target = repository_dir(repository.pk)
    limits = _limits(job)
    fetching = started
    with staging_area(target) as staging:
        try:
            with clone_slot(wait_seconds=settings.REPO_SEARCH_CLONE_TIMEOUT_SECS):
                fetching = time.monotonic()
                check_alive(job_id)
                result = _fetch_into(staging, target, repository, limits, branch)
        except GitFetchError as error:
            return _fetch_failed(job, claim, error, fetching, final_attempt)
        except Exception as error:
            claim.stop_if_lost(error)  # what a run that lost its claim meets is not its to report
            raise
        check_alive(job_id)
        if default and not repository.branch:
            taken = default_branch_taken(repository, result.branch)
            if taken:  # another copy was added with this branch while this one was queued
                return _fail(job, claim, taken)
        size = directory_size(staging)
        with transaction.atomic():
            claim.check()  # under the job's row lock: no other run can move in between
            move_into_place(staging, target)
            if default and not repository.branch:
                Repository.objects.filter(pk=repository.pk).update(branch=result.branch)
            Repository.objects.filter(pk=repository.pk).update(size_bytes=size)
            note_fetched_tip(repository, job, target, result.commit_sha)
            IndexJob.objects.filter(pk=job.pk).update(
                commit=result.commit_sha,
                bytes_fetched=result.bytes_received,
                stage_timings=record_timing(job, "cloning", started),
            )
        return True


def note_fetched_tip(repository: Repository, job: IndexJob, clone: Path, commit: str) -> None:
    """A fetch reads the remote's tip: it is the newest word on it, so the tip an earlier poll
    noted gives way to it (else an index newer than the last poll reads "behind"). Kept only
    when the clone shows the noted tip descends from the fetched commit (a push noted since)."""
    rows: Any = (
        Repository.objects.filter(pk=repository.pk)
        if job.branch_id is None
        else IndexedBranch.objects.filter(pk=job.branch_id)
    )
    noted = rows.values_list("remote_tip", flat=True).first() or ""
    if noted and noted != commit and is_ancestor(clone, commit, noted):
        return
    rows.update(remote_tip=commit)


def _fetch_failed(
    job: IndexJob, claim: StageClaim, error: GitFetchError, fetching: float, final_attempt: bool
) -> bool:
    """Queue the job for another attempt (``TransientFailure``) or fail it, as its own run."""
    with transaction.atomic():
        claim.check()
        job = clone_budget.charge_failed_attempt(job, fetching)
        retry = clone_budget.may_retry(error, job, final_attempt)
        if retry:
            jobs.transition(job, JobState.QUEUED, error=f"retrying: {error.message}")
        else:
            fail_job(job, clone_budget.failure_message(error, job, final_attempt))
    if retry:
        raise TransientFailure(error.message) from error
    return False
