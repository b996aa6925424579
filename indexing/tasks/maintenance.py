"""Periodic housekeeping tasks (default queue)."""

from __future__ import annotations

from datetime import timedelta

from celery import shared_task
from django.conf import settings

from indexing.services.jobs import reap_stale_jobs as reap


@shared_task(name="indexing.tasks.maintenance.reap_stale_jobs", acks_late=True, ignore_result=True)
def reap_stale_jobs() -> list[int]:
    """Fail jobs whose heartbeat went stale (their worker died or hung)."""
    return reap(timedelta(seconds=settings.REPO_SEARCH_JOB_STALE_SECS))


@shared_task(
    name="indexing.tasks.maintenance.fill_missing_vectors", acks_late=True, ignore_result=True
)
def fill_missing_vectors() -> list[int]:
    """Queue re-embedding where vectors of the current embedding model are missing."""
    from indexing.services.repositories import queue_missing_embeddings

    return [job.pk for job in queue_missing_embeddings()]
