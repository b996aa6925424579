"""Tasks of the ``index`` queue: walk, chunk and store (CPU and database bound)."""

from __future__ import annotations

from celery import shared_task

from indexing.enqueue import enqueue_embed
from indexing.services.locks import LockBusy, repository_lock
from indexing.services.stages import fetch_and_index
from indexing.services.stages.run_context import JobCancelled
from indexing.tasks import retry_budget
from indexing.tasks.database_outage import DATABASE_ERRORS, retry_after_database_outage
from indexing.tasks.git import repository_id_of

INDEX_TIME_LIMIT_SECS = 2 * 3600


@shared_task(
    bind=True,
    name="indexing.tasks.index.index_repository",
    acks_late=True,
    reject_on_worker_lost=True,  # idempotent: an unfinished generation is discarded on re-run
    max_retries=None,  # each kind of retry has its own budget (retry_budget)
    soft_time_limit=INDEX_TIME_LIMIT_SECS,
    time_limit=INDEX_TIME_LIMIT_SECS + 120,
)
def index_repository(  # type: ignore[no-untyped-def]
    self,
    job_id: int,
    transient_failures: int = 0,
    lock_waits: int = 0,
    lock_wait_started: float = 0.0,
    database_waits: int = 0,
) -> None:
    """Store the fetched commit as a new generation and swap it in, then queue embedding.

    The counts are retry_budget's (the same for every stage task; this one has no transient
    failures of its own)."""
    try:
        _index(self, job_id)
    except DATABASE_ERRORS as error:
        retry_after_database_outage(self, job_id, error)


def _index(task, job_id: int) -> None:  # type: ignore[no-untyped-def]
    repository_id = repository_id_of(job_id)
    if repository_id is None:
        return
    try:
        with repository_lock(repository_id, job_id):
            proceed = fetch_and_index.run_index(job_id, task_id=task.request.id or "")
    except LockBusy as error:
        retry_budget.lock_wait_retry(task, job_id, repository_id, error)
        return
    except JobCancelled:
        return
    if proceed:
        enqueue_embed(job_id, wait_for_broker=True)  # a broker outage now must not lose it
