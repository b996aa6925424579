"""Tasks of the ``embed`` queue: model inference (CPU/GPU bound)."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from indexing.services.locks import LockBusy, repository_lock
from indexing.services.stages.embed import run_embed
from indexing.services.stages.run_context import JobCancelled, TransientFailure
from indexing.tasks.database_outage import DATABASE_ERRORS, retry_after_database_outage
from indexing.tasks.git import repository_id_of

EMBED_TIME_LIMIT_SECS = 3 * 3600


@shared_task(
    bind=True,
    name="indexing.tasks.embed.embed_repository",
    acks_late=True,
    reject_on_worker_lost=True,  # idempotent: only missing vectors are computed
    max_retries=len(settings.REPO_SEARCH_EMBED_RETRY_DELAYS_SECS),
    soft_time_limit=EMBED_TIME_LIMIT_SECS,
    time_limit=EMBED_TIME_LIMIT_SECS + 120,
)
def embed_repository(self, job_id: int) -> None:  # type: ignore[no-untyped-def]
    """Fill in the live generation's vectors; the model being down is retried, then reported."""
    try:
        _embed(self, job_id)
    except DATABASE_ERRORS as error:
        retry_after_database_outage(self, job_id, error)


def _embed(task, job_id: int) -> None:  # type: ignore[no-untyped-def]
    repository_id = repository_id_of(job_id)
    if repository_id is None:
        return
    final = task.request.retries >= task.max_retries
    try:
        with repository_lock(repository_id, job_id):
            run_embed(job_id, final_attempt=final, task_id=task.request.id or "")
    except LockBusy as error:
        raise task.retry(exc=error, countdown=15, max_retries=task.max_retries + 20) from error
    except TransientFailure as error:
        delays = settings.REPO_SEARCH_EMBED_RETRY_DELAYS_SECS
        raise task.retry(
            exc=error, countdown=delays[min(task.request.retries, len(delays) - 1)]
        ) from error
    except JobCancelled:
        return
