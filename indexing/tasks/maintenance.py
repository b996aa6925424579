"""Periodic housekeeping tasks (default queue)."""

from __future__ import annotations

import logging
from datetime import timedelta

from celery import shared_task
from django.conf import settings

from indexing.services.jobs import reap_stale_jobs as reap

logger = logging.getLogger(__name__)


@shared_task(name="indexing.tasks.maintenance.reap_stale_jobs", acks_late=True, ignore_result=True)
def reap_stale_jobs() -> list[int]:
    """Fail jobs whose heartbeat went stale (their worker died or hung) and revoke their tasks,
    so a hung task that wakes up, or a redelivered one, does not carry on with an ended job."""
    reaped = reap(timedelta(seconds=settings.REPO_SEARCH_JOB_STALE_SECS))
    if reaped:
        revoke_tasks_of(reaped)
    return reaped


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
