"""Index job state: legal transitions, heartbeats, counters, and the reaper of stale jobs.

Progress and state live on the ``IndexJob`` row (never in Celery's result backend), so the API,
the admin and the UI all read the same truth while a job runs.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from indexing.models import FINISHED_JOB_STATES, IndexJob, JobState, Repository, RepositoryStatus

logger = logging.getLogger(__name__)

_RUNNING = (
    JobState.CLONING,
    JobState.WALKING,
    JobState.CHUNKING,
    JobState.STORING,
    JobState.EMBEDDING,
)
_ENDINGS = {JobState.FAILED, JobState.CANCELLED}

# Each running stage may move forward, end, or go back to "queued" for a retry.
ALLOWED_TRANSITIONS: dict[str, set[str]] = {
    JobState.QUEUED: {JobState.CLONING, JobState.EMBEDDING, *_ENDINGS},  # EMBEDDING: re-embed jobs
    JobState.CLONING: {JobState.WALKING, JobState.QUEUED, *_ENDINGS},
    # The index stage may restart (WALKING again) when its worker died and the task was redelivered.
    JobState.WALKING: {JobState.CHUNKING, JobState.WALKING, JobState.QUEUED, *_ENDINGS},
    JobState.CHUNKING: {JobState.STORING, JobState.WALKING, JobState.QUEUED, *_ENDINGS},
    JobState.STORING: {
        JobState.EMBEDDING,
        JobState.WALKING,
        JobState.DONE,
        JobState.COMPLETED_WITH_ERRORS,
        JobState.QUEUED,
        *_ENDINGS,
    },
    JobState.EMBEDDING: {JobState.DONE, JobState.COMPLETED_WITH_ERRORS, JobState.QUEUED, *_ENDINGS},
    JobState.DONE: set(),
    JobState.COMPLETED_WITH_ERRORS: set(),
    JobState.FAILED: set(),
    JobState.CANCELLED: set(),
}


class IllegalTransition(Exception):
    """A job was asked to move to a state it cannot reach from its current one."""


def transition(job: IndexJob, new_state: str, *, error: str = "", **fields: Any) -> IndexJob:
    """Move ``job`` to ``new_state`` under a row lock; refuse illegal moves."""
    with transaction.atomic():
        locked = IndexJob.objects.select_for_update().get(pk=job.pk)
        if new_state not in ALLOWED_TRANSITIONS[locked.state]:
            raise IllegalTransition(
                f"job {locked.pk}: {locked.state} -> {new_state} is not allowed"
            )
        now = timezone.now()
        if new_state != locked.state or new_state == JobState.WALKING:  # WALKING: a restart
            locked.stage_started_at = now
        locked.state = new_state
        locked.heartbeat_at = now
        if new_state in _RUNNING and locked.started_at is None:
            locked.started_at = now
        if new_state in FINISHED_JOB_STATES:
            locked.finished_at = now
        if error:
            locked.error = error
        for name, value in fields.items():
            setattr(locked, name, value)
        locked.save()
    logger.info("job=%s repository=%s state=%s", locked.pk, locked.repository_id, new_state)
    return locked


def heartbeat(job_id: int, **counters: int) -> None:
    """Record that the job is alive, optionally setting counters, in one UPDATE."""
    IndexJob.objects.filter(pk=job_id).update(heartbeat_at=timezone.now(), **counters)


def reap_stale_jobs(
    stale_after: timedelta, *, only: list[int] | None = None, message: str = ""
) -> list[int]:
    """Fail running jobs whose heartbeat is older than ``stale_after`` (among ``only``, when
    given); return their ids.

    A job whose worker died mid-run never reaches a finished state by itself. Its repository
    keeps serving the previous complete generation; if it has none, it is marked failed.
    """
    cutoff = timezone.now() - stale_after
    reaped: list[int] = []
    stale = IndexJob.objects.filter(state__in=[JobState.QUEUED, *_RUNNING])
    if only is None:
        stale = stale.filter(heartbeat_at__lt=cutoff)
    else:  # chosen by the caller: a job that never started has no heartbeat at all
        stale = stale.filter(pk__in=only).filter(
            Q(heartbeat_at__lte=cutoff) | Q(heartbeat_at__isnull=True)
        )
    minutes = int(stale_after.total_seconds() // 60) or 1
    message = message or (
        f"the worker stopped reporting progress for over {minutes} min; job abandoned"
    )
    for job in stale.select_related("repository"):
        with transaction.atomic():  # the job and its repository change together
            try:
                transition(job, JobState.FAILED, error=message)
            except IllegalTransition:
                continue  # it finished meanwhile
            reaped.append(job.pk)
            repository = job.repository
            if repository.active_generation == 0:
                Repository.objects.filter(pk=repository.pk).update(
                    status=RepositoryStatus.FAILED, error=message
                )
            else:
                Repository.objects.filter(pk=repository.pk).update(status=RepositoryStatus.READY)
    if reaped:
        logger.warning("reaped stale jobs: %s", reaped)
    return reaped
