"""End to end: a real Celery worker indexes real git repositories served over HTTP by dulwich.

The test process serves the repositories and talks to the API; the worker process (started by
the session fixture, consuming every queue through Redis) clones, walks, chunks, stores and
embeds them into the test database.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from indexing.models import Chunk, ChunkEmbedding, IndexJob, Repository, SourceFile
from tests.accounts_support import token_client
from tests.indexing.demo_repository import EXPECTED_PATHS, FILES, UTIL_JS, add, wait_for_job
from tests.indexing.git_server import GitHttpServer, SilentServer, commit_files, init_bare_repo

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def blob_lines(repository: Repository, chunk: Chunk) -> str:
    from indexing.clone_paths import repository_dir
    from indexing.git.tree import GitTreeReader

    with GitTreeReader(repository_dir(repository.pk)) as reader:
        text = reader.read_blob(chunk.file.blob_sha).decode()
    return "\n".join(text.split("\n")[chunk.start_line - 1 : chunk.end_line])


def test_a_repository_is_cloned_indexed_and_searchable(celery_worker_process, served) -> None:
    server, _repo = served
    created = add(server.url("team/demo.git"))
    job = wait_for_job(created["job"]["id"])
    assert job.state == "done", (job.state, job.error, job.failures)
    repository = Repository.objects.get(pk=created["id"])
    assert repository.status == "ready"
    assert repository.branch == "main"
    assert len(repository.last_indexed_commit) == 40

    files = SourceFile.objects.filter(
        repository=repository, generation=repository.active_generation
    )
    assert set(files.values_list("path", flat=True)) == EXPECTED_PATHS
    test_file = files.get(path="tests/test_parser.py")
    assert test_file.is_test and not test_file.is_doc
    assert files.get(path="README.md").is_doc
    assert files.get(path="src/app/parser.py").language == "python"

    chunks = Chunk.objects.filter(repository=repository, generation=repository.active_generation)
    assert repository.chunk_count == chunks.count() > 0
    for chunk in chunks.select_related("file"):
        assert chunk.content == blob_lines(repository, chunk), chunk
    symbols = set(chunks.values_list("symbol", flat=True))
    assert {"parse_http_header", "HeaderCache", "HeaderCache.lookup"} <= symbols
    lookup = chunks.get(symbol="HeaderCache.lookup")
    assert lookup.symbol_name == "lookup"
    assert "parse_http_header" in lookup.calls  # what call-graph expansion follows

    # Full-text search works with no model: identifier words meet across spellings.
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT symbol FROM indexing_chunk WHERE repository_id = %s"
            " AND search_vector @@ to_tsquery('simple', 'parse & http & header')"
            " ORDER BY ts_rank_cd(search_vector, to_tsquery('simple', 'parse & http & header')) DESC",
            [repository.pk],
        )
        found = [row[0] for row in cursor.fetchall()]
    assert found and found[0] == "parse_http_header"

    # Every chunk has a real MiniLM vector (the local model runs inside the worker).
    assert repository.embedded_count == repository.chunk_count
    assert ChunkEmbedding.objects.filter(repository=repository).count() == repository.chunk_count

    # Nothing outside the checkout was read: no symlink target, no ignored or vendored file.
    contents = "".join(chunks.values_list("content", flat=True))
    assert "root:x:0:0" not in contents
    assert "GENERATED" not in contents and "module.exports" not in contents

    detail = token_client().get(f"/api/repos/{repository.pk}").json()
    assert detail["current_job"]["state"] == "done"
    assert detail["current_job"]["progress"] == 1.0
    assert set(detail["current_job"]["stage_timings"]) >= {
        "cloning",
        "walking",
        "chunking",
        "storing",
        "embedding",
    }


def test_incremental_reindex_only_touches_changed_files(celery_worker_process, served) -> None:
    server, repo = served
    created = add(server.url("team/demo.git"))
    assert wait_for_job(created["job"]["id"]).state == "done"
    repository = Repository.objects.get(pk=created["id"])
    parser_chunks = dict(
        Chunk.objects.filter(repository=repository, path="src/app/parser.py").values_list(
            "id", "content_hash"
        )
    )
    parser_vectors = set(
        ChunkEmbedding.objects.filter(chunk_id__in=parser_chunks).values_list("id", flat=True)
    )
    assert parser_chunks and len(parser_vectors) == len(parser_chunks)

    second = dict(FILES)
    del second["README.md"]
    second["src/app/util.js"] = UTIL_JS.replace("attempts", "tries")
    second["src/app/extra.py"] = "def brand_new_function():\n    return 42\n"
    commit_files(repo, second, message="second", parent=repository.last_indexed_commit.encode())

    response = token_client().post(f"/api/repos/{repository.pk}/reindex")
    assert response.status_code == 202
    assert response.json()["kind"] == "incremental"
    job = wait_for_job(response.json()["id"])
    assert job.state == "done", (job.error, job.failures)

    repository.refresh_from_db()
    live = Chunk.objects.filter(repository=repository, generation=repository.active_generation)
    paths = set(live.values_list("path", flat=True))
    assert "README.md" not in paths
    assert "src/app/extra.py" in paths
    # The unchanged file was neither re-chunked nor re-embedded: same rows, same vectors.
    assert (
        dict(live.filter(path="src/app/parser.py").values_list("id", "content_hash"))
        == parser_chunks
    )
    assert (
        set(ChunkEmbedding.objects.filter(chunk_id__in=parser_chunks).values_list("id", flat=True))
        == parser_vectors
    )
    assert "tries" in "".join(live.filter(path="src/app/util.js").values_list("content", flat=True))
    # The old generation is gone entirely.
    assert (
        not Chunk.objects.filter(repository=repository)
        .exclude(generation=repository.active_generation)
        .exists()
    )
    assert repository.embedded_count == repository.chunk_count == live.count()


def _assert_failed_cleanly(created: dict, fragment: str) -> None:
    job = wait_for_job(created["job"]["id"])
    assert job.state == "failed"
    assert fragment in job.error.lower(), job.error
    repository = Repository.objects.get(pk=created["id"])
    assert repository.status == "failed"
    assert fragment in repository.error.lower()
    assert not Chunk.objects.filter(repository=repository).exists()
    assert not (Path(settings.REPO_SEARCH_DATA_DIR) / "repos" / created["id"]).exists()


def test_a_missing_repository_fails_the_job_with_a_plain_message(
    celery_worker_process, served
) -> None:
    server, _repo = served
    _assert_failed_cleanly(add(server.url("team/missing.git")), "not found")


def test_an_oversize_repository_is_stopped_and_leaves_nothing(
    celery_worker_process, tmp_path
) -> None:
    repo = init_bare_repo(str(tmp_path / "huge.git"))
    commit_files(repo, {"blob.bin": os.urandom(16 * 1024 * 1024)})  # the worker's limit is 2 MB
    with GitHttpServer({"big/huge.git": repo}) as server:
        created = add(server.url("big/huge.git"))
        _assert_failed_cleanly(created, "limit")
        # Stopped near the limit, not after the whole 16 MB (local socket buffers hold a few MB).
        assert server.bytes_sent < 10 * 1024 * 1024


def test_a_silent_server_times_out(celery_worker_process) -> None:
    with SilentServer() as server:
        _assert_failed_cleanly(add(server.url("slow/repo.git")), "timed out")


def test_a_worker_killed_mid_job_never_shows_partial_data(celery_worker_process, served) -> None:
    """SIGKILL the pool processes while a re-index is writing its new generation."""
    import signal

    server, repo = served
    created = add(server.url("team/demo.git"))
    assert wait_for_job(created["job"]["id"]).state == "done"
    repository = Repository.objects.get(pk=created["id"])
    first_generation, first_count = repository.active_generation, repository.chunk_count

    # Many files make the index stage long enough to be caught; one function each (one chunk,
    # not three) keeps the embed stage that follows the redelivered run a third as long.
    bigger = dict(FILES)
    for number in range(1500):
        bigger[f"pkg/module_{number}.py"] = (
            f"def function_{number}(value):\n    return value * {number}\n"
        )
    commit_files(repo, bigger, message="many files", parent=repository.last_indexed_commit.encode())
    job_id = token_client().post(f"/api/repos/{repository.pk}/reindex").json()["id"]

    deadline = time.monotonic() + 60
    while IndexJob.objects.get(pk=job_id).state not in {"walking", "chunking", "storing"}:
        assert time.monotonic() < deadline, IndexJob.objects.get(pk=job_id).state
        time.sleep(0.02)
    killed = celery_worker_process.pool_children()
    for pid in killed:
        os.kill(pid, signal.SIGKILL)

    # While the job is interrupted, searches still see the complete previous generation.
    repository.refresh_from_db()
    assert repository.status == "ready"
    live = Chunk.objects.filter(repository=repository, generation=repository.active_generation)
    if repository.active_generation == first_generation:
        assert live.count() == first_count
    assert live.count() == repository.chunk_count

    # The task is redelivered (reject_on_worker_lost) and the run converges.
    job = wait_for_job(job_id, seconds=600)
    assert job.state in {"done", "completed_with_errors"}, (job.state, job.error)
    repository.refresh_from_db()
    assert repository.active_generation > first_generation
    assert (
        SourceFile.objects.filter(
            repository=repository, generation=repository.active_generation
        ).count()
        == 1504
    )
    assert (
        not Chunk.objects.filter(repository=repository)
        .exclude(generation=repository.active_generation)
        .exists()
    )
    assert repository.chunk_count == Chunk.objects.filter(repository=repository).count()
