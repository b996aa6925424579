"""Tasks of the ``index`` queue: walk, chunk and store (CPU and database bound)."""

from __future__ import annotations

from celery import shared_task

from indexing.enqueue import enqueue_embed
from indexing.services.stages import fetch_and_index
from indexing.tasks.stage_task import StageTask, run_locked_stage

INDEX_TIME_LIMIT_SECS = 2 * 3600


@shared_task(
    base=StageTask,
    bind=True,
    name="indexing.tasks.index.index_repository",
    soft_time_limit=INDEX_TIME_LIMIT_SECS,
    time_limit=INDEX_TIME_LIMIT_SECS + 120,
)
def index_repository(self, job_id: int, **counts: object) -> None:  # type: ignore[no-untyped-def]
    """Store the fetched commit as a new generation and swap it in, then queue embedding
    (an unfinished generation is discarded when the stage runs again; ``counts``:
    ``retry_budget``'s)."""

    def index(final: bool) -> bool:
        return fetch_and_index.run_index(job_id, task_id=self.request.id or "")

    if run_locked_stage(self, job_id, index):
        enqueue_embed(job_id, wait_for_broker=True)  # a broker outage now must not lose it
