"""What every stage task (fetch, index, embed) shares: its Celery options and the shell around
the stage's work.

- **Options** (``StageTask``): acknowledged late and rejected when the worker is lost, so a
  stage killed mid-way runs again (every stage converges when re-run); ``max_retries=None``,
  because each kind of retry keeps its own budget (``retry_budget``).
- **The shell** (``run_locked_stage``): the job's repository lock held around the work; a busy
  lock waits (``retry_budget.lock_wait_retry``); a transient failure is retried after the
  stage's delays; a cancelled job ends quietly; a database outage sends the task again later
  (``database_outage``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from celery import Task

from indexing.services.locks import LockBusy, repository_lock
from indexing.services.stages.run_context import JobCancelled, TransientFailure
from indexing.tasks import retry_budget
from indexing.tasks.database_outage import DATABASE_ERRORS, retry_after_database_outage


class StageTask(Task):  # type: ignore[misc]
    acks_late = True
    reject_on_worker_lost = True  # idempotent: a stage killed mid-way starts over
    max_retries = None  # each kind of retry has its own budget (retry_budget)


def repository_id_of(job_id: int) -> object | None:
    from indexing.models import IndexJob

    return IndexJob.objects.filter(pk=job_id).values_list("repository_id", flat=True).first()


def run_locked_stage(
    task: Task,
    job_id: int,
    work: Callable[[bool], bool | None],
    *,
    delays: Sequence[int] = (),
) -> bool:
    """Run ``work(final_attempt)`` holding the job's repository lock; whether it finished and
    the job goes on to its next stage. ``delays``: the retry delays of the stage's transient
    failures (none: it has none); ``final_attempt`` is true once they are used up."""
    try:
        repository_id = repository_id_of(job_id)
        if repository_id is None:
            return False
        final = retry_budget.is_final_attempt(task, delays)
        try:
            with repository_lock(repository_id, job_id):
                return bool(work(final))
        except TransientFailure as error:
            if not delays:
                raise
            raise retry_budget.transient_retry(task, error, delays) from error
        except LockBusy as error:  # the repository's lock, or every clone slot
            retry_budget.lock_wait_retry(task, job_id, repository_id, error)
            return False
        except JobCancelled:
            return False
    except DATABASE_ERRORS as error:
        retry_after_database_outage(task, job_id, error)
