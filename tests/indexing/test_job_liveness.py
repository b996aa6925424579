"""A job that has ended stops its stages: a job the reaper failed never swaps its generation in,
and a long store keeps reporting that it is alive (committed, so the reaper can see it)."""

from __future__ import annotations

from datetime import timedelta

import psycopg
import pytest
from django.db import connection
from django.utils import timezone

from indexing.models import FINISHED_JOB_STATES, IndexJob, JobState, Repository
from indexing.services.branch_generations import swap_branch_generation
from indexing.services.jobs import reap_stale_jobs
from indexing.services.stages.claims import StageClaim
from indexing.services.stages.embed import run_embed
from indexing.services.stages.run_context import JobCancelled, check_alive
from indexing.services.storing import store_files
from search.executor import SearchExecutor, SearchRequest
from tests import factories

OLD = ["def parse_http_header(line):\n    return line.split(':', 1)"]


def _stale_job(repository, state: str) -> IndexJob:  # type: ignore[no-untyped-def]
    long_ago = timezone.now() - timedelta(hours=2)
    return IndexJob.objects.create(
        repository=repository, state=state, heartbeat_at=long_ago, started_at=long_ago
    )


@pytest.mark.django_db
@pytest.mark.parametrize("state", sorted(FINISHED_JOB_STATES))
def test_every_final_state_stops_a_running_stage(state: str) -> None:
    repository = factories.indexed_repository("l/a", OLD, url="https://example.org/l/a.git")
    job = IndexJob.objects.create(repository=repository, state=state)
    with pytest.raises(JobCancelled, match=state):
        check_alive(job.pk)


@pytest.mark.django_db
def test_a_job_failed_by_the_reaper_never_swaps_its_generation() -> None:
    repository = factories.indexed_repository(
        "l/b", OLD, url="https://example.org/l/b.git", commit="c" * 40
    )
    job = _stale_job(repository, JobState.STORING)
    claim = StageClaim.of(job)
    # The slow run got this far.
    store_files(repository.pk, 2, [factories.stored_functions("src/new.py", 3)])

    assert reap_stale_jobs(timedelta(minutes=10)) == [job.pk]
    with pytest.raises(JobCancelled, match="failed"):
        swap_branch_generation(repository.pk, None, 2, [], "d" * 40, before_swap=claim.check)

    repository.refresh_from_db()
    assert repository.active_generation == 1 and repository.last_indexed_commit == "c" * 40
    hits = SearchExecutor().run(SearchRequest(query="parse_http_header", use_vector=False)).hits
    assert [hit.symbol for hit in hits] == ["s0"]  # the last complete generation still answers


@pytest.mark.django_db
def test_a_running_job_swaps_as_before() -> None:
    repository = factories.indexed_repository("l/c", OLD, url="https://example.org/l/c.git")
    job = IndexJob.objects.create(repository=repository, state=JobState.STORING)
    store_files(repository.pk, 2, [factories.stored_functions("src/new.py", 2)])
    swapped = swap_branch_generation(
        repository.pk, None, 2, [], "d" * 40, before_swap=StageClaim.of(job).check
    )
    assert (
        isinstance(swapped, Repository)
        and swapped.active_generation == 2
        and swapped.chunk_count == 2
    )


@pytest.mark.django_db
def test_the_embed_stage_of_a_reaped_job_ends_quietly_and_keeps_the_failure() -> None:
    repository = factories.indexed_repository("l/d", OLD, url="https://example.org/l/d.git")
    job = _stale_job(repository, JobState.EMBEDDING)
    reap_stale_jobs(timedelta(minutes=10))
    run_embed(job.pk)  # a redelivered task: nothing to do for an ended job
    job.refresh_from_db()
    assert job.state == JobState.FAILED and "stopped reporting progress" in job.error


@pytest.mark.django_db(transaction=True)
def test_a_long_store_commits_batches_and_heartbeats_the_reaper_can_see() -> None:
    repository = factories.indexed_repository("l/e", OLD, url="https://example.org/l/e.git")
    job = _stale_job(repository, JobState.STORING)
    db = connection.settings_dict
    outside = psycopg.connect(
        host=db["HOST"] or "127.0.0.1",
        port=db["PORT"] or 5432,
        user=db["USER"],
        password=db.get("PASSWORD") or None,
        dbname=db["NAME"],
        autocommit=True,
    )
    seen: list[tuple[int, int, bool]] = []

    def on_batch(written: int) -> None:
        IndexJob.objects.filter(pk=job.pk).update(heartbeat_at=timezone.now())
        # What another connection (the reaper's) sees while the store is still going:
        row = outside.execute(
            "SELECT (SELECT count(*) FROM indexing_chunk WHERE repository_id = %s"
            " AND generation = 2), heartbeat_at > now() - interval '1 minute'"
            " FROM indexing_indexjob WHERE id = %s",
            [repository.pk, job.pk],
        ).fetchone()
        assert row is not None
        seen.append((written, row[0], row[1]))

    try:
        files = [factories.stored_functions(f"src/m{n}.py", 100) for n in range(12)]  # 1,200 chunks
        assert store_files(repository.pk, 2, files, on_batch=on_batch) == 1200
    finally:
        outside.close()
    assert [written for written, _, _ in seen] == [500, 1000, 1200]
    assert all(visible == written for written, visible, _ in seen)  # each batch committed
    assert all(fresh for _, _, fresh in seen)
    assert reap_stale_jobs(timedelta(minutes=10)) == []  # a heartbeating store is not reaped
