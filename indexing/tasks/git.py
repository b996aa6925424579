"""Tasks of the ``git`` queue: fetching repositories (network-bound, low concurrency)."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from indexing.enqueue import enqueue_index
from indexing.services.stages import fetch_and_index
from indexing.tasks.stage_task import StageTask, run_locked_stage


@shared_task(
    base=StageTask,
    bind=True,
    name="indexing.tasks.git.fetch_repository",
    soft_time_limit=settings.REPO_SEARCH_CLONE_TIMEOUT_SECS * 2 + 120,
    time_limit=settings.REPO_SEARCH_CLONE_TIMEOUT_SECS * 2 + 180,
)
def fetch_repository(self, job_id: int, **counts: object) -> None:  # type: ignore[no-untyped-def]
    """Fetch the job's repository, then hand over to the index queue (``counts``: the retry
    budgets' counts, ``retry_budget``)."""

    def fetch(final: bool) -> bool:
        task_id = self.request.id or ""
        return fetch_and_index.run_fetch(job_id, task_id=task_id, final_attempt=final)

    if run_locked_stage(self, job_id, fetch, delays=settings.REPO_SEARCH_FETCH_RETRY_DELAYS_SECS):
        enqueue_index(job_id)
