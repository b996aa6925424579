"""Separate retry budgets for the stage tasks: waits are not failures.

A stage task is sent again for three different reasons, and each keeps its own count, carried
in the task's keyword arguments (``transient_failures``, ``lock_waits`` with
``lock_wait_started``, ``database_waits``):

- a transient failure (network hiccup, model server down): backoff from the stage's own delays,
  and the stage's ``final_attempt`` is true only once *those* retries are used up;
- a busy lock (another run holds the repository's lock, e.g. a SIGKILLed pool child's lock
  until its TTL, or every clone slot is taken): retried every ``REPO_SEARCH_LOCK_RETRY_SECS``
  up to ``REPO_SEARCH_LOCK_WAIT_MAX_SECS`` of waiting in all, then the job fails saying so;
- a database outage: its own schedule (``database_outage.DATABASE_RETRY_DELAYS_SECS``).

Celery's own ``request.retries`` counts all three, so the tasks set ``max_retries=None`` and
never read it. ``Task.retry(kwargs=...)`` (Celery 5.7) keeps the positional ``job_id`` and sends
the given keyword arguments with the retried message; a message redelivered after its worker
was lost (``acks_late`` + ``reject_on_worker_lost``) is the same message, counts included.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

from celery.exceptions import Retry
from django.conf import settings

from indexing.services import locks

logger = logging.getLogger(__name__)

TRANSIENT, LOCK, DATABASE = "transient_failures", "lock_waits", "database_waits"
LOCK_STARTED = "lock_wait_started"


def count(task: Any, kind: str) -> int:
    return int((task.request.kwargs or {}).get(kind, 0))


def _retry(task: Any, kind: str, error: Exception, countdown: float, **extra: object) -> Retry:
    """Send the task again with ``kind`` counted once more (``Task.retry`` raises ``Retry``)."""
    kwargs = {**(task.request.kwargs or {}), **extra, kind: count(task, kind) + 1}
    return task.retry(kwargs=kwargs, exc=error, countdown=countdown)  # type: ignore[no-any-return]


def is_final_attempt(task: Any, delays: Sequence[int]) -> bool:
    """True when a transient failure of this run may not be retried (only failures count)."""
    return count(task, TRANSIENT) >= len(delays)


def transient_retry(task: Any, error: Exception, delays: Sequence[int]) -> Retry:
    """The retry of a transient failure, after the next of ``delays``."""
    done = count(task, TRANSIENT)
    countdown = delays[min(done, len(delays) - 1)]
    return _retry(task, TRANSIENT, error, countdown, **{LOCK_STARTED: 0})  # it had the lock


def database_retry(task: Any, error: Exception, delays: Sequence[int]) -> Retry:
    """The retry after a database outage; past the schedule ``error`` itself is raised."""
    done = count(task, DATABASE)
    if done >= len(delays):
        raise error
    return _retry(task, DATABASE, error, delays[done])


def lock_interval() -> int:
    return int(settings.REPO_SEARCH_LOCK_RETRY_SECS)


def lock_wait_retry(task: Any, job_id: int, repository_id: object, error: Exception) -> None:
    """Retry a run that met a busy lock soon, or, once it has waited long enough, fail its job.

    The wait is measured by the clock from the first busy lock of this run of waits
    (``lock_wait_started``, epoch seconds), not by retries: a clone-slot wait spends
    ``REPO_SEARCH_CLONE_TIMEOUT_SECS`` inside each attempt. A second delivery of a task whose
    first delivery is still running meets the same job's lock (its token names the job): it is
    dropped instead, not the live run's job failed.
    """
    now = time.time()
    started = float((task.request.kwargs or {}).get(LOCK_STARTED) or now)
    waited = now - started
    if waited < settings.REPO_SEARCH_LOCK_WAIT_MAX_SECS:
        raise _retry(task, LOCK, error, lock_interval(), **{LOCK_STARTED: started})
    holder = locks.repository_lock_holder(repository_id)
    if holder is not None and holder.startswith(f"job:{job_id}:"):
        logger.info("job=%s task=%s: its own job holds the lock; duplicate dropped", job_id, task)
        return
    from indexing.services.stages.run_context import fail_job, load_run

    context = load_run(job_id)
    if context is None:
        return
    message = (
        f"{error}: gave up after waiting {waited:.0f} s for it"
        f" (REPO_SEARCH_LOCK_WAIT_MAX_SECS={settings.REPO_SEARCH_LOCK_WAIT_MAX_SECS})"
    )
    logger.warning("job=%s task=%s failed: %s", job_id, task.name, message)
    fail_job(context.job, message)
