"""Jobs whose task was lost are resumed, on real workers: the whole worker killed mid-embed and
started again, and a queued job whose message the broker lost (a restart without persistence)."""

from __future__ import annotations

import os
import signal
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from indexing.models import Chunk, ChunkEmbedding, IndexJob, JobKind, Repository
from indexing.tasks.maintenance import reap_stale_jobs
from tests.accounts_support import token_client
from tests.indexing.demo_repository import FILES, add, wait_for_job
from tests.indexing.git_server import commit_files

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def _many_modules(count: int) -> dict[str, object]:
    files = dict(FILES)
    for number in range(count):
        files[f"pkg/module_{number}.py"] = (
            f"def function_{number}(value):\n    return value * {number}\n\n\n"
            f"class Model{number}:\n    def method(self):\n        return function_{number}(1)\n"
        )
    return files


def _assert_complete(repository: Repository) -> None:
    live = Chunk.objects.filter(repository=repository, generation=repository.active_generation)
    assert (
        live.count()
        == repository.chunk_count
        == Chunk.objects.filter(repository=repository).count()
    )
    vectors = ChunkEmbedding.objects.filter(repository=repository)
    assert vectors.count() == live.count()  # every chunk once: none missing, none doubled


def test_a_job_lost_with_its_whole_worker_resumes_when_a_worker_starts(
    celery_worker_process, served
) -> None:
    server, repo = served
    commit_files(repo, _many_modules(120), message="many modules")
    created = add(server.url("team/demo.git"))
    job_id = created["job"]["id"]
    deadline = time.monotonic() + 300
    while not (
        (job := IndexJob.objects.get(pk=job_id)).state == "embedding" and job.chunks_embedded
    ):
        assert time.monotonic() < deadline and not job.is_finished, (job.state, job.error)
        time.sleep(0.05)

    os.killpg(celery_worker_process.pid, signal.SIGKILL)  # main process and pool: a power cut
    assert celery_worker_process.process is not None
    celery_worker_process.process.wait(30)
    assert not IndexJob.objects.get(pk=job_id).is_finished
    celery_worker_process.start()  # the machine comes back; nobody touches the job

    job = wait_for_job(job_id, seconds=300)
    assert job.state == "done", (job.state, job.error)
    assert job.resumes == 1
    repository = Repository.objects.get(pk=created["id"])
    _assert_complete(repository)
    assert repository.embedded_count == repository.chunk_count


def test_a_queued_job_whose_message_was_lost_is_resumed_by_the_reaper(
    celery_worker_process, served
) -> None:
    server, _repo = served
    # As after a broker restart without persistence: the rows exist, the message does not.
    repository = Repository.objects.create(url=server.url("team/demo.git"), name="team/lost")
    job = IndexJob.objects.create(repository=repository, kind=JobKind.FULL)
    IndexJob.objects.filter(pk=job.pk).update(created_at=timezone.now() - timedelta(hours=1))

    reap_stale_jobs.delay()

    job = wait_for_job(job.pk, seconds=180)
    assert job.state == "done", (job.state, job.error)
    assert job.resumes == 1
    repository.refresh_from_db()
    assert repository.status == "ready" and repository.chunk_count > 0
    _assert_complete(repository)
    hits = token_client().post("/api/search", {"query": "parse_http_header"}, format="json").json()
    assert hits["results"][0]["file_path"] == "src/app/parser.py"
