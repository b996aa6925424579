"""Tasks that keep indexes fresh: the beat-driven dispatcher and one remote check each
(default queue: a check is one small request and must not wait behind clones on ``git``)."""

from __future__ import annotations

from celery import shared_task

from indexing.enqueue import enqueue_poll
from indexing.services import polling


@shared_task(name="indexing.tasks.polling.poll_due_repositories", ignore_result=True)
def poll_due_repositories() -> int:
    """Send a check for every repository that is due, spread over the tick; returns how many."""
    claimed = polling.claim_due_repositories()
    for repository_id, countdown in claimed:
        enqueue_poll(repository_id, countdown=countdown)
    return len(claimed)


@shared_task(
    name="indexing.tasks.polling.poll_repository",
    acks_late=True,
    ignore_result=True,
    soft_time_limit=polling.POLL_TIMEOUT_SECS + 30,
    time_limit=polling.POLL_TIMEOUT_SECS + 60,
)
def poll_repository(repository_id: str) -> None:
    """Check one repository's remote; a moved tip queues an incremental re-index."""
    from indexing.models import Repository

    repository = Repository.objects.filter(pk=repository_id).first()
    if repository is None:
        return
    polling.poll_repository(repository)
