"""What every stage of an index run shares: loading its job, noticing cancellation, timings,
and ending the job when it fails."""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass

from django.db import transaction

from indexing.clone_paths import repository_dir
from indexing.models import (
    FINISHED_JOB_STATES,
    IndexedBranch,
    IndexJob,
    JobState,
    Repository,
    RepositoryStatus,
)
from indexing.services import jobs
from indexing.services.branches import queue_next_branch


class JobCancelled(Exception):
    """The job ended while a stage ran (cancelled, failed by the reaper, its repository deleted):
    the stage stops without writing anything more."""


class TransientFailure(Exception):
    """Worth retrying later (network hiccup, server 5xx); the job is back in the queue."""


@dataclass(frozen=True)
class RunContext:
    job: IndexJob
    repository: Repository


def load_run(job_id: int) -> RunContext | None:
    job = IndexJob.objects.select_related("repository", "branch").filter(pk=job_id).first()
    if job is None or job.is_finished:
        return None
    return RunContext(job, job.repository)


def check_alive(job_id: int) -> None:
    """Raise ``JobCancelled`` when the job is gone or in any final state."""
    state = IndexJob.objects.filter(pk=job_id).values_list("state", flat=True).first()
    if state is None or state in FINISHED_JOB_STATES:
        raise JobCancelled(f"job {job_id} is {state or 'gone'}; the stage stops")


def fail_job(job: IndexJob, message: str) -> None:
    """End the job with a plain message; the repository keeps its last complete generation.

    The job and the repository change in one transaction, so nobody sees a failed job next to
    a repository that still says it is indexing.
    """
    with transaction.atomic():
        try:
            jobs.transition(job, JobState.FAILED, error=message)
        except jobs.IllegalTransition:
            return
        transaction.on_commit(lambda: queue_next_branch(job.repository_id))
        if job.branch_id is not None:  # another branch's failure: the default stays as it is
            IndexedBranch.objects.filter(pk=job.branch_id).update(error=message)
            return
        repository = Repository.objects.select_for_update().filter(pk=job.repository_id).first()
        if repository is None:
            return
        first_index_failed = repository.active_generation == 0
        if first_index_failed:
            repository.status, repository.error = RepositoryStatus.FAILED, message
        else:
            repository.status = RepositoryStatus.READY
            repository.error = f"last re-index failed: {message}"
        repository.save(update_fields=["status", "error", "updated_at"])
        if first_index_failed:  # nothing half-written stays behind, before anyone sees "failed"
            shutil.rmtree(repository_dir(repository.pk), ignore_errors=True)


def record_timing(job: IndexJob, stage: str, started: float) -> dict[str, float]:
    timings = dict(job.stage_timings)
    timings[stage] = round(timings.get(stage, 0.0) + time.monotonic() - started, 3)
    return timings
