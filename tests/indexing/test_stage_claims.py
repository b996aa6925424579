"""A run another run has taken over writes nothing more: a worker host cut off mid-store whose
job was resumed elsewhere comes back, and its next batch and its swap are refused, so search
never sees its rows next to the new run's."""

from __future__ import annotations

import pytest

from indexing.models import Chunk, IndexJob, JobState, Repository
from indexing.services import jobs
from indexing.services.branch_generations import swap_branch_generation
from indexing.services.stages.claims import StageClaim
from indexing.services.stages.run_context import JobCancelled
from indexing.services.storing import store_files
from tests import factories

OLD = ["def parse_http_header(line):\n    return line.split(':', 1)"]


def _run_to_storing(job: IndexJob) -> tuple[IndexJob, StageClaim]:
    job = jobs.transition(job, JobState.WALKING, generation=2)
    claim = StageClaim.of(job)
    job = claim.advance(job, JobState.CHUNKING)
    return claim.advance(job, JobState.STORING), claim


@pytest.mark.django_db
def test_a_run_taken_over_by_another_writes_no_batch_and_never_swaps() -> None:
    repository = factories.indexed_repository("c/a", OLD)
    job = IndexJob.objects.create(repository=repository, state=JobState.CLONING, commit="d" * 40)
    job, first = _run_to_storing(job)
    store_files(repository.pk, 2, [factories.stored_functions("src/one.py", 2)], fence=first.check)

    # The first host went silent; the job was resumed on another host, which starts over.
    job, second = _run_to_storing(IndexJob.objects.get(pk=job.pk))

    with pytest.raises(JobCancelled, match="taken over"):
        store_files(
            repository.pk, 2, [factories.stored_functions("src/two.py", 3)], fence=first.check
        )
    with pytest.raises(JobCancelled, match="taken over"):
        swap_branch_generation(repository.pk, None, 2, [], "d" * 40, before_swap=first.check)
    with pytest.raises(JobCancelled, match="taken over"):
        first.advance(job, JobState.EMBEDDING)
    assert not Chunk.objects.filter(repository=repository, path="src/two.py").exists()
    assert IndexJob.objects.get(pk=job.pk).state == JobState.STORING

    # The run that holds the claim goes on as before.
    store_files(
        repository.pk, 2, [factories.stored_functions("src/three.py", 4)], fence=second.check
    )
    swapped = swap_branch_generation(repository.pk, None, 2, [], "d" * 40, before_swap=second.check)
    assert isinstance(swapped, Repository) and swapped.active_generation == 2
    assert swapped.chunk_count == 2 + 4  # the new run discards first's rows in the real stage


@pytest.mark.django_db
def test_an_ended_job_refuses_its_claim() -> None:
    repository = factories.indexed_repository("c/b", OLD)
    job = IndexJob.objects.create(repository=repository, state=JobState.CLONING, commit="d" * 40)
    job, claim = _run_to_storing(job)
    jobs.transition(job, JobState.CANCELLED)
    with pytest.raises(JobCancelled, match="cancelled"):
        store_files(
            repository.pk, 2, [factories.stored_functions("src/one.py", 1)], fence=claim.check
        )
