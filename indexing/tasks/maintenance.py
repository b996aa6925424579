"""Periodic housekeeping tasks (default queue)."""

from __future__ import annotations

import logging
from datetime import timedelta

from celery import shared_task
from celery.signals import worker_ready
from django.conf import settings

from indexing.services.jobs import reap_stale_jobs as reap
from indexing.services.recovery import recover

logger = logging.getLogger(__name__)


# After a worker (re)starts, jobs silent this long whose task nobody holds were lost with it.
RESUME_AFTER_START_QUIET_SECS = 10


@shared_task(name="indexing.tasks.maintenance.reap_stale_jobs", acks_late=True, ignore_result=True)
def reap_stale_jobs() -> list[int]:
    """Jobs silent for ``REPO_SEARCH_JOB_STALE_SECS``: resume those whose task was lost, fail
    (and revoke) those whose task runs but hangs; jobs waiting in a queue are left alone."""
    report = recover(timedelta(seconds=settings.REPO_SEARCH_JOB_STALE_SECS))
    if not report.judged:  # no worker answered the census: the plain heartbeat rule
        report.failed = reap(timedelta(seconds=settings.REPO_SEARCH_JOB_STALE_SECS))
    if report.failed:
        revoke_tasks_of(report.failed)
    return report.failed


@shared_task(name="indexing.tasks.maintenance.resume_lost_jobs", acks_late=True, ignore_result=True)
def resume_lost_jobs() -> list[int]:
    """Run once after a worker starts: a worker killed with its tasks (SIGKILL, a power cut)
    leaves jobs no live worker holds; they are resumed now instead of after the stale delay."""
    # A job silent since before this worker started; a start-up delay set shorter (the tests)
    # shortens the quiet time with it, or the sweep would find the lost jobs still too fresh.
    quiet = min(RESUME_AFTER_START_QUIET_SECS, settings.REPO_SEARCH_RESUME_AFTER_START_DELAY_SECS)
    report = recover(
        timedelta(seconds=quiet),
        hung_after=timedelta(seconds=settings.REPO_SEARCH_JOB_STALE_SECS),
    )
    return report.resumed


@worker_ready.connect
def _resume_lost_jobs_after_start(**_: object) -> None:
    # REPO_SEARCH_RESUME_AFTER_START_DELAY_SECS: let the other workers come up and answer the
    # census first.
    resume_lost_jobs.apply_async(countdown=settings.REPO_SEARCH_RESUME_AFTER_START_DELAY_SECS)


def revoke_tasks_of(job_ids: list[int]) -> list[str]:
    """Revoke the Celery task each job last ran under; the broker being down costs nothing more
    than the revocation (every stage also stops by itself when it sees its job has ended)."""
    from indexing.models import IndexJob
    from reposearch.celery import app

    task_ids = [
        task_id
        for task_id in IndexJob.objects.filter(pk__in=job_ids).values_list(
            "celery_task_id", flat=True
        )
        if task_id
    ]
    if task_ids:
        try:
            app.control.revoke(task_ids)
        except Exception:  # a broker outage must not fail the reaper
            logger.warning("could not revoke tasks %s", task_ids, exc_info=True)
            return []
    return task_ids


@shared_task(
    name="indexing.tasks.maintenance.fill_missing_vectors", acks_late=True, ignore_result=True
)
def fill_missing_vectors() -> list[int]:
    """Queue re-embedding where vectors of the current embedding model are missing."""
    from indexing.services.repositories import queue_missing_embeddings

    return [job.pk for job in queue_missing_embeddings()]


@shared_task(name="indexing.tasks.maintenance.repair_drift", acks_late=True, ignore_result=True)
def repair_drift() -> list[dict[str, object]]:
    """``manage.py doctor`` on a schedule: find drift between the database and the data
    directory and, unless ``REPO_SEARCH_DOCTOR_REPAIR=0``, repair it (findings are logged)."""
    from indexing.services.doctor import examine

    report = examine(repair=settings.REPO_SEARCH_DOCTOR_REPAIR)
    return report.as_dict()["findings"]
