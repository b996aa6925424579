"""Honest progress: time left from measured rates per stage, and why a waiting job waits.

Jobs come from the real services (``add_repository``, the pipeline's fetch and index stages,
``jobs.transition``); the embed stage's pace is played forward by setting its counter at chosen
instants, so the estimates can be read at each one without waiting on a clock.
"""

from __future__ import annotations

from datetime import timedelta
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from indexing import progress
from indexing.models import IndexJob, JobKind, JobState
from indexing.services import jobs
from indexing.services.repositories import add_repository
from indexing.services.stages.fetch_and_index import run_fetch
from tests.accounts_support import token_client
from tests.indexing.real_run import fetch_and_index, mirror

pytestmark = pytest.mark.django_db


@pytest.fixture
def local(settings: Any, tmp_path: Path) -> Path:
    settings.REPO_SEARCH_DATA_DIR = tmp_path / "data"
    settings.REPO_SEARCH_ALLOW_LOCAL_PATHS = True
    return tmp_path


def mirrors(root: Path, count: int) -> list[Path]:
    paths = []
    for number in range(count):
        directory = root / f"m{number}"
        directory.mkdir()
        paths.append(mirror(directory, {"a.py": f"A = {number}\n"}))
    return paths


def test_queued_jobs_say_how_many_are_ahead_in_the_git_queue(local: Path) -> None:
    first, second, third = (add_repository(str(p)) for p in mirrors(local, 3))
    assert progress.waiting(first) == progress.Waiting(
        "git", 0, "waiting for a worker on the git queue"
    )
    assert progress.waiting(third) == progress.Waiting(
        "git", 2, "waiting: 2 jobs ahead in the git queue"
    )
    # The API says the same, in the job the Repositories page reads.
    listed = token_client().get("/api/repos").json()
    by_id = {repo["id"]: repo["current_job"] for repo in listed}
    assert by_id[str(third.repository_id)]["waiting"] == {
        "queue": "git",
        "jobs_ahead": 2,
        "reason": "waiting: 2 jobs ahead in the git queue",
    }
    assert by_id[str(third.repository_id)]["eta_seconds"] is None  # nothing counted yet
    del second


def test_a_queued_job_waits_for_a_clone_slot_when_every_slot_fetches(
    local: Path, settings: Any
) -> None:
    settings.REPO_SEARCH_MAX_CONCURRENT_CLONES = 1
    fetching, queued = (add_repository(str(p)) for p in mirrors(local, 2))
    jobs.transition(fetching, JobState.CLONING)
    waiting = progress.waiting(queued)
    assert waiting is not None and waiting.queue == "clone slot"
    assert waiting.reason == "waiting for a clone slot: 1 of 1 fetches running"


def test_a_stored_job_waits_in_the_embed_queue_behind_the_ones_before_it(local: Path) -> None:
    first, second = (fetch_and_index(path, f"acme/{n}") for n, path in enumerate(mirrors(local, 2)))
    assert progress.waiting(first) == progress.Waiting(
        "embed", 0, "waiting for a worker on the embed queue"
    )
    assert progress.waiting(second) == progress.Waiting(
        "embed", 1, "waiting: 1 job ahead in the embed queue"
    )
    jobs.transition(first, JobState.EMBEDDING)
    assert progress.waiting(second) == progress.Waiting(
        "embed", 1, "waiting: 1 job ahead in the embed queue (1 embedding now)"
    )
    assert progress.waiting(IndexJob.objects.get(pk=first.pk)) is None  # working


def test_the_estimate_follows_a_steady_embed_stage_without_jumps(local: Path) -> None:
    """Chunks stored, then embedded at a steady 12 chunks/s (half the default rate): from the
    stage change on, the time left moves by about a second per second (it grows a little while
    the job's own slower pace outweighs the default rate, then only shrinks) and ends near the
    job's true pace."""
    job = fetch_and_index(mirror(local))
    chunks = 600
    IndexJob.objects.filter(pk=job.pk).update(chunks_total=chunks)
    job.refresh_from_db()
    rates = progress.recent_rates()
    assert rates.per_second["embedding"] == progress.DEFAULT_RATES["embedding"]  # no history
    waiting_estimate = progress.estimate(job, rates)
    assert waiting_estimate.stage_seconds == 0.0
    assert waiting_estimate.total_seconds == pytest.approx(chunks / 23.7)

    job = jobs.transition(job, JobState.EMBEDDING)
    began = job.stage_started_at
    assert began is not None
    job.slice_started_at = began  # as the embed stage's first slice records it
    pace = 12.0
    seen: list[float] = []
    for second in range(0, 51):
        job.chunks_embedded = int(pace * second)
        left = progress.estimate(job, rates, now=began + timedelta(seconds=second))
        assert left.stage_seconds == left.total_seconds
        assert left.total_seconds is not None
        seen.append(left.total_seconds)
    # At the stage change the estimate is the one shown while waiting: no jump.
    assert seen[0] == pytest.approx(waiting_estimate.total_seconds)
    steps = [later - earlier for earlier, later in pairwise(seen)]
    assert max(abs(step) for step in steps) < 1.5  # about a second per second, no leaps
    assert max(seen) < seen[0] * 1.15  # the slower pace corrects it gently
    assert all(step < 0 for step in steps[10:])  # then it only goes down
    truth = (chunks - pace * 40) / pace
    assert seen[40] == pytest.approx(truth, rel=0.25)  # by then close to the job's own pace


def _embedding(job: IndexJob, **fields: Any) -> IndexJob:
    job = jobs.transition(job, JobState.EMBEDDING)
    IndexJob.objects.filter(pk=job.pk).update(**fields)
    return IndexJob.objects.get(pk=job.pk)


def test_a_restart_or_a_wait_between_slices_does_not_slow_the_pace(local: Path) -> None:
    """Seen before: "3,240 s left" after a restart, the stage's clock having run while no
    worker did. The pace counts only the time slices worked: 480 chunks in 40 s."""
    job = fetch_and_index(mirror(local))
    IndexJob.objects.filter(pk=job.pk).update(chunks_total=600)
    job = _embedding(
        job, chunks_embedded=480, stage_timings={**job.stage_timings, "embedding": 40.0}
    )
    rates = progress.recent_rates()
    an_hour_later = timezone.now() + timedelta(hours=1)
    between = progress.estimate(job, rates, now=an_hour_later)  # no slice running
    assert between.stage_seconds == pytest.approx(120 / ((480 + 237) / 50), rel=0.01)
    # A new slice (after the restart) adds its own seconds, not the hour before it.
    IndexJob.objects.filter(pk=job.pk).update(slice_started_at=an_hour_later)
    job.refresh_from_db()
    running = progress.estimate(job, rates, now=an_hour_later + timedelta(seconds=1))
    assert running.stage_seconds == pytest.approx(between.stage_seconds, rel=0.03)


def test_reused_vectors_do_not_make_the_estimate_optimistic(local: Path) -> None:
    """Seen before: "about 41 s left" for a 4-minute job. 500 chunks were counted in the first
    seconds because their vectors existed; only the 20 computed ones measure the model."""
    job = fetch_and_index(mirror(local))
    IndexJob.objects.filter(pk=job.pk).update(chunks_total=5500)
    began = timezone.now()
    job = _embedding(job, chunks_embedded=500, chunks_reused=480, slice_started_at=began)
    left = progress.estimate(job, progress.recent_rates(), now=began + timedelta(seconds=2))
    computed_pace = (20 + 237) / 12  # blended with the default 23.7 chunks/s over 10 s
    assert left.stage_seconds == pytest.approx(5000 / computed_pace, rel=0.01)
    assert left.stage_seconds > 200


def test_jobs_embedding_at_once_share_the_embed_worker(local: Path, settings: Any) -> None:
    settings.REPO_SEARCH_EMBED_CONCURRENCY = 1
    first, second, third = (
        fetch_and_index(path, f"acme/{n}") for n, path in enumerate(mirrors(local, 3))
    )
    IndexJob.objects.filter(pk__in=[first.pk, second.pk, third.pk]).update(chunks_total=237)
    alone = _embedding(first)
    assert progress.estimate(alone, progress.recent_rates()).stage_seconds == pytest.approx(10.0)
    _embedding(second)
    rates = progress.recent_rates()
    both = progress.estimate(IndexJob.objects.get(pk=first.pk), rates)
    assert both.stage_seconds == pytest.approx(20.0)  # every other slice is the other's
    # A job still waiting to embed will share with both: three ways.
    waiting = progress.estimate(IndexJob.objects.get(pk=third.pk), rates)
    assert waiting.total_seconds == pytest.approx(30.0)
    settings.REPO_SEARCH_EMBED_CONCURRENCY = 2  # two processes embed: two at full pace
    assert progress.estimate(
        IndexJob.objects.get(pk=first.pk), progress.recent_rates()
    ).stage_seconds == pytest.approx(10.0)


def test_recent_full_jobs_set_the_rates_of_the_next_estimate(local: Path) -> None:
    job = fetch_and_index(mirror(local))
    jobs.transition(job, JobState.EMBEDDING)
    finished = jobs.transition(
        IndexJob.objects.get(pk=job.pk),
        JobState.DONE,
        chunks_embedded=400,
        stage_timings={**job.stage_timings, "embedding": 20.0},
    )
    assert finished.kind == JobKind.FULL
    rates = progress.recent_rates()
    assert rates.per_second["embedding"] == pytest.approx(20.0)

    waiting_job = fetch_and_index(mirror(local / "data", {"b.py": "B = 1\n"}), "acme/next")
    IndexJob.objects.filter(pk=waiting_job.pk).update(chunks_total=100)
    waiting_job.refresh_from_db()
    assert progress.estimate(waiting_job, rates).total_seconds == pytest.approx(5.0)


def test_finished_jobs_have_no_estimate_and_a_full_bar(local: Path) -> None:
    job = fetch_and_index(mirror(local))
    done = jobs.transition(job, JobState.DONE)
    assert progress.fraction(done) == 1.0
    assert progress.estimate(done, progress.recent_rates()) == progress.Estimate(None, None)
    assert progress.waiting(done) is None
    body = token_client().get(f"/api/jobs/{done.pk}").json()
    assert body["eta_seconds"] is None and body["waiting"] is None and body["progress"] == 1.0


def test_the_stage_clock_starts_at_each_state_change(local: Path) -> None:
    job = add_repository(str(mirror(local)))
    assert job.stage_started_at is None
    before = timezone.now()
    cloning = jobs.transition(job, JobState.CLONING)
    assert cloning.stage_started_at is not None and cloning.stage_started_at >= before
    walking = jobs.transition(cloning, JobState.WALKING)
    assert walking.stage_started_at is not None
    assert walking.stage_started_at >= cloning.stage_started_at


def test_near_the_end_of_chunking_the_time_left_counts_the_embedding_to_come(local: Path) -> None:
    """The old page said "about 3 s left" at the end of chunking and "about 57 s" once the
    embedding began: the estimate now counts the stages still to come."""
    job = add_repository(str(mirror(local)))
    for state in (JobState.CLONING, JobState.WALKING):
        job = jobs.transition(job, state)
    job = jobs.transition(job, JobState.CHUNKING, files_total=100, files_done=99)
    rates = progress.recent_rates()
    left = progress.estimate(job, rates)
    assert left.stage_seconds is not None and left.stage_seconds < 1
    chunks = 100 * rates.chunks_per_file
    embedding = chunks / rates.per_second["embedding"]
    assert left.total_seconds == pytest.approx(
        left.stage_seconds + chunks / rates.per_second["storing"] + embedding
    )
    stored = jobs.transition(job, JobState.STORING, files_done=100, chunks_total=int(chunks))
    after = progress.estimate(stored, rates)
    assert after.total_seconds == pytest.approx(left.total_seconds, rel=0.05)


def test_a_fetching_job_past_the_clone_slots_waits_for_one(local: Path, settings: Any) -> None:
    settings.REPO_SEARCH_MAX_CONCURRENT_CLONES = 1
    first, second = (add_repository(str(p)) for p in mirrors(local, 2))
    first = jobs.transition(first, JobState.CLONING)
    second = jobs.transition(second, JobState.CLONING)  # its task waits in clone_slot()
    assert progress.waiting(first) is None  # it holds the slot
    assert progress.waiting(second) == progress.Waiting(
        "clone slot", 1, "waiting for a clone slot: 1 of 1 fetches running"
    )


def test_a_fetched_job_waits_in_the_index_queue(local: Path) -> None:
    busy, fetched = (add_repository(str(p)) for p in mirrors(local, 2))
    for state in (JobState.CLONING, JobState.WALKING):
        busy = jobs.transition(busy, state)
    assert run_fetch(fetched.pk)  # the index task is not run: it waits in its queue
    fetched.refresh_from_db()
    assert progress.waiting(fetched) == progress.Waiting(
        "index", 1, "waiting: 1 job ahead in the index queue (1 indexing now)"
    )
