"""Tasks of the ``git`` queue: fetching repositories (network-bound, low concurrency)."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from indexing.enqueue import enqueue_index
from indexing.services.locks import LockBusy, repository_lock
from indexing.services.stages import fetch_and_index
from indexing.services.stages.run_context import JobCancelled, TransientFailure
from indexing.tasks import retry_budget
from indexing.tasks.database_outage import DATABASE_ERRORS, retry_after_database_outage


def repository_id_of(job_id: int) -> object | None:
    from indexing.models import IndexJob

    return IndexJob.objects.filter(pk=job_id).values_list("repository_id", flat=True).first()


@shared_task(
    bind=True,
    name="indexing.tasks.git.fetch_repository",
    acks_late=True,
    reject_on_worker_lost=True,  # idempotent: a fetch killed mid-way starts over
    max_retries=None,  # each kind of retry has its own budget (retry_budget)
    soft_time_limit=settings.REPO_SEARCH_CLONE_TIMEOUT_SECS * 2 + 120,
    time_limit=settings.REPO_SEARCH_CLONE_TIMEOUT_SECS * 2 + 180,
)
def fetch_repository(  # type: ignore[no-untyped-def]
    self,
    job_id: int,
    transient_failures: int = 0,
    lock_waits: int = 0,
    lock_wait_started: float = 0.0,
    database_waits: int = 0,
) -> None:
    """Fetch the job's repository, then hand over to the index queue (the counts: retry_budget)."""
    try:
        _fetch(self, job_id)
    except DATABASE_ERRORS as error:
        retry_after_database_outage(self, job_id, error)


def _fetch(task, job_id: int) -> None:  # type: ignore[no-untyped-def]
    repository_id = repository_id_of(job_id)
    if repository_id is None:
        return
    delays = settings.REPO_SEARCH_FETCH_RETRY_DELAYS_SECS
    final = retry_budget.is_final_attempt(task, delays)
    try:
        with repository_lock(repository_id, job_id):
            proceed = fetch_and_index.run_fetch(
                job_id, task_id=task.request.id or "", final_attempt=final
            )
    except TransientFailure as error:
        raise retry_budget.transient_retry(task, error, delays) from error
    except LockBusy as error:  # the repository's lock, or every clone slot
        retry_budget.lock_wait_retry(task, job_id, repository_id, error)
        return
    except JobCancelled:
        return
    if proceed:
        enqueue_index(job_id)
