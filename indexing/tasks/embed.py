"""Tasks of the ``embed`` queue: model inference (CPU/GPU bound)."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from indexing.services.stages.embed import SliceUsedUp, run_embed
from indexing.tasks.stage_task import StageTask, run_locked_stage

EMBED_TIME_LIMIT_SECS = 3 * 3600


@shared_task(
    base=StageTask,
    bind=True,
    name="indexing.tasks.embed.embed_repository",
    soft_time_limit=EMBED_TIME_LIMIT_SECS,
    time_limit=EMBED_TIME_LIMIT_SECS + 120,
)
def embed_repository(self, job_id: int, **counts: object) -> None:  # type: ignore[no-untyped-def]
    """Fill in the live generation's vectors (only missing ones are computed); the model being
    down is retried, then reported (``counts``: ``retry_budget``'s)."""

    def embed(final: bool) -> None:
        run_embed(job_id, final_attempt=final, task_id=self.request.id or "")

    try:
        run_locked_stage(self, job_id, embed, delays=settings.REPO_SEARCH_EMBED_RETRY_DELAYS_SECS)
    except SliceUsedUp as error:
        # To the back of the embed queue, counts unchanged: the worker takes the other
        # repositories' slices first, then this one's next (fair shares of the cores).
        raise self.retry(kwargs=self.request.kwargs or {}, exc=error, countdown=0) from error
