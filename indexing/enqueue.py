"""Putting indexing work on the queues: the one module that enqueues the pipeline's tasks.

Each function sends its task once the current transaction commits (``transaction.on_commit``,
what Celery's ``delay_on_commit`` does), so a task never looks for a job row that is not there
yet; outside a transaction it is sent at once.
Routing to the ``git`` / ``index`` / ``embed`` queues is in the settings (``CELERY_TASK_ROUTES``).
"""

from __future__ import annotations

from functools import partial

from django.db import transaction


def enqueue_fetch(job_id: int) -> None:
    """Fetch the job's repository (then index and embed it)."""
    from indexing.tasks.git import fetch_repository

    transaction.on_commit(partial(fetch_repository.delay, job_id))


def enqueue_index(job_id: int) -> None:
    """Walk, chunk and store the fetched commit (then embed it)."""
    from indexing.tasks.index import index_repository

    transaction.on_commit(partial(index_repository.delay, job_id))


def enqueue_embed(job_id: int) -> None:
    """Embed the job's chunks that have no vector in the current embedding space."""
    from indexing.tasks.embed import embed_repository

    transaction.on_commit(partial(embed_repository.delay, job_id))


def enqueue_poll(repository_id: object, countdown: float = 0.0) -> None:
    """Check the repository's remote for a new tip (``indexing.services.polling``)."""
    from indexing.tasks.polling import poll_repository

    transaction.on_commit(
        partial(poll_repository.apply_async, args=(str(repository_id),), countdown=countdown)
    )
