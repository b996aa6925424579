"""A task goes through Redis to a real Celery worker process and its effect lands in the database."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.utils import timezone

from indexing.models import IndexJob, JobState, Repository, RepositoryStatus
from indexing.services.recovery import MAX_RESUMES
from indexing.tasks.maintenance import reap_stale_jobs


def wait_for(predicate, seconds: float = 30.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return False


@pytest.mark.django_db(transaction=True)
def test_reaper_task_runs_on_a_real_worker_and_fails_a_stale_job(celery_worker_process) -> None:
    repository = Repository.objects.create(url="https://example.com/a/b.git", name="a/b")
    stale = IndexJob.objects.create(
        repository=repository,
        state=JobState.CHUNKING,
        heartbeat_at=timezone.now() - timedelta(hours=2),
        started_at=timezone.now() - timedelta(hours=2),
        resumes=MAX_RESUMES,  # its task was lost (no worker holds it) once too often
    )
    fresh = IndexJob.objects.create(
        repository=repository, state=JobState.EMBEDDING, heartbeat_at=timezone.now()
    )

    reap_stale_jobs.delay()

    assert wait_for(lambda: IndexJob.objects.get(pk=stale.pk).state == JobState.FAILED)
    stale.refresh_from_db()
    assert "task was lost 4 times" in stale.error
    assert stale.finished_at is not None
    assert IndexJob.objects.get(pk=fresh.pk).state == JobState.EMBEDDING
    # The repository never had a complete generation, so it is failed, not "ready".
    repository.refresh_from_db()
    assert repository.status == RepositoryStatus.FAILED


@pytest.mark.django_db(transaction=True)
def test_the_reaper_revokes_the_task_of_a_job_it_fails(celery_worker_process) -> None:
    from reposearch.celery import app

    repository = Repository.objects.create(url="https://example.com/a/c.git", name="a/c")
    stale = IndexJob.objects.create(
        repository=repository,
        state=JobState.STORING,
        celery_task_id="5f0c1f8e-0000-4000-8000-00000000beef",
        heartbeat_at=timezone.now() - timedelta(hours=2),
        resumes=MAX_RESUMES,
    )

    reap_stale_jobs.delay()

    assert wait_for(lambda: IndexJob.objects.get(pk=stale.pk).state == JobState.FAILED)

    def revoked_by_worker() -> bool:
        answers = app.control.inspect(timeout=1.0).revoked() or {}
        return any(stale.celery_task_id in ids for ids in answers.values())

    # A redelivered copy of that task is now discarded by the worker instead of run.
    assert wait_for(revoked_by_worker, seconds=15)
