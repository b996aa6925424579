"""Index jobs move only along legal transitions; finished jobs stay finished."""

from __future__ import annotations

import pytest

from indexing.models import IndexJob, JobState, Repository
from indexing.services.jobs import IllegalTransition, transition


@pytest.fixture
def job(db) -> IndexJob:
    repository = Repository.objects.create(url="https://example.com/x/y.git", name="x/y")
    return IndexJob.objects.create(repository=repository)


def test_a_job_walks_through_its_stages(job: IndexJob) -> None:
    for state in (
        JobState.CLONING,
        JobState.WALKING,
        JobState.CHUNKING,
        JobState.STORING,
        JobState.EMBEDDING,
        JobState.DONE,
    ):
        job = transition(job, state)
    assert job.state == JobState.DONE
    assert job.started_at is not None and job.finished_at is not None
    assert job.duration_seconds is not None and job.duration_seconds >= 0


def test_skipping_stages_is_refused(job: IndexJob) -> None:
    with pytest.raises(IllegalTransition, match="queued -> done"):
        transition(job, JobState.DONE)
    job.refresh_from_db()
    assert job.state == JobState.QUEUED


def test_a_finished_job_cannot_restart(job: IndexJob) -> None:
    job = transition(job, JobState.CANCELLED)
    with pytest.raises(IllegalTransition):
        transition(job, JobState.CLONING)
