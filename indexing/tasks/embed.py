"""Tasks of the ``embed`` queue: model inference (CPU/GPU bound)."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from indexing.services.locks import LockBusy, repository_lock
from indexing.services.stages.embed import SliceUsedUp, run_embed
from indexing.services.stages.run_context import JobCancelled, TransientFailure
from indexing.tasks import retry_budget
from indexing.tasks.database_outage import DATABASE_ERRORS, retry_after_database_outage
from indexing.tasks.git import repository_id_of

EMBED_TIME_LIMIT_SECS = 3 * 3600


@shared_task(
    bind=True,
    name="indexing.tasks.embed.embed_repository",
    acks_late=True,
    reject_on_worker_lost=True,  # idempotent: only missing vectors are computed
    max_retries=None,  # each kind of retry has its own budget (retry_budget)
    soft_time_limit=EMBED_TIME_LIMIT_SECS,
    time_limit=EMBED_TIME_LIMIT_SECS + 120,
)
def embed_repository(  # type: ignore[no-untyped-def]
    self,
    job_id: int,
    transient_failures: int = 0,
    lock_waits: int = 0,
    lock_wait_started: float = 0.0,
    database_waits: int = 0,
) -> None:
    """Fill in the live generation's vectors; the model being down is retried, then reported."""
    try:
        _embed(self, job_id)
    except DATABASE_ERRORS as error:
        retry_after_database_outage(self, job_id, error)


def _embed(task, job_id: int) -> None:  # type: ignore[no-untyped-def]
    repository_id = repository_id_of(job_id)
    if repository_id is None:
        return
    delays = settings.REPO_SEARCH_EMBED_RETRY_DELAYS_SECS
    final = retry_budget.is_final_attempt(task, delays)
    try:
        with repository_lock(repository_id, job_id):
            run_embed(job_id, final_attempt=final, task_id=task.request.id or "")
    except LockBusy as error:
        retry_budget.lock_wait_retry(task, job_id, repository_id, error)
        return
    except SliceUsedUp as error:
        # To the back of the embed queue, counts unchanged: the worker takes the other
        # repositories' slices first, then this one's next (fair shares of the cores).
        raise task.retry(kwargs=task.request.kwargs or {}, exc=error, countdown=0) from error
    except TransientFailure as error:
        raise retry_budget.transient_retry(task, error, delays) from error
    except JobCancelled:
        return
