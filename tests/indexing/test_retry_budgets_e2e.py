"""End to end: waiting for a busy repository lock does not use up a fetch's transient retries.

A real Celery worker (restarted for this module with short lock/backoff settings, then put back
as it was) fetches a repository whose lock this test process holds in the same Redis — as a
SIGKILLed pool child's lock is held until its TTL. Before, each lock wait was a Celery retry
counted against the four meant for network failures: the job failed with ``LockBusy`` after
four waits, and a network failure after a few waits was already the final attempt.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from dulwich.repo import Repo

from indexing.models import IndexJob, Repository
from indexing.services import locks
from tests.accounts_support import token_client
from tests.indexing.demo_repository import add, wait_for_job
from tests.indexing.git_server import GitHttpServer, commit_files, init_bare_repo

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

LOCK_RETRY_SECS = 1
LOCK_WAIT_MAX_SECS = 12
FETCH_RETRY_DELAYS = (1, 1, 1)  # three transient retries: the fourth attempt is the final one
OLD_MAX_RETRIES = 4  # len(RETRY_BACKOFF_SECS) before: every retry of any kind counted
SHORT_WAITS = {
    "REPO_SEARCH_LOCK_RETRY_SECS": str(LOCK_RETRY_SECS),
    "REPO_SEARCH_LOCK_WAIT_MAX_SECS": str(LOCK_WAIT_MAX_SECS),
    "REPO_SEARCH_FETCH_RETRY_DELAYS_SECS": ",".join(map(str, FETCH_RETRY_DELAYS)),
}


@pytest.fixture(scope="module")
def short_wait_worker(celery_worker_process: Any) -> Iterator[Any]:
    """The session's worker, restarted with short lock waits; restarted as it was after."""
    saved = {name: celery_worker_process.env.get(name) for name in SHORT_WAITS}
    celery_worker_process.stop()
    celery_worker_process.env.update(SHORT_WAITS)
    celery_worker_process.start()
    yield celery_worker_process
    celery_worker_process.stop()
    for name, value in saved.items():
        if value is None:
            celery_worker_process.env.pop(name, None)
        else:
            celery_worker_process.env[name] = value
    celery_worker_process.start()


class FlakyServer(GitHttpServer):
    """Answers ``503`` to the first ``failures`` requests (a transient failure), then serves."""

    def __init__(self, repos: dict[str, Repo], failures: int = 0) -> None:
        super().__init__(repos)
        self.failures_left = failures
        self.failed = 0

    def _app(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        if self.failures_left > 0:
            self.failures_left -= 1
            self.failed += 1
            start_response("503 Service Unavailable", [("Content-Length", "0")])
            return [b""]
        return super()._app(environ, start_response)


@pytest.fixture
def flaky(tmp_path: Path) -> Iterator[tuple[FlakyServer, Repo]]:
    repo = init_bare_repo(str(tmp_path / "flaky.git"))
    commit_files(repo, {"README.md": "# flaky\n", "app.py": "def f():\n    return 1\n"})
    with FlakyServer({"team/flaky.git": repo}) as server:
        yield server, repo
    repo.close()


def indexed(server: FlakyServer) -> Repository:
    created = add(server.url("team/flaky.git"))
    job = wait_for_job(created["job"]["id"])
    assert job.state == "done", (job.state, job.error)
    return Repository.objects.get(pk=created["id"])


def reindex(repository: Repository) -> int:
    response = token_client().post(f"/api/repos/{repository.pk}/reindex")
    assert response.status_code == 202, response.json()
    return int(response.json()["id"])


def held_lock(repository: Repository) -> Any:
    """The repository's lock, as another run holds it. The job that just finished may still
    hold it for a moment (its state is ``done`` inside the embed stage's lock)."""
    return locks.repository_lock(repository.pk, "test-holder", wait_seconds=30)


def lock_waits_logged(worker: Any, repository: Repository, since: int) -> int:
    """How many times the worker retried a stage of ``repository`` because its lock was busy."""
    with open(worker.log_path, "rb") as log:
        log.seek(since)
        text = log.read().decode(errors="replace")
    needle = f"LockBusy('repository {repository.pk} is being indexed by another run')"
    return sum(1 for line in text.splitlines() if " retry: " in line and needle in line)


def hold_lock_until_waits(worker: Any, repository: Repository, waits: int, since: int) -> None:
    deadline = time.monotonic() + 120
    while lock_waits_logged(worker, repository, since) < waits:
        if time.monotonic() > deadline:
            job = IndexJob.objects.filter(repository=repository).order_by("-pk").first()
            raise AssertionError(
                f"{lock_waits_logged(worker, repository, since)} lock waits, not {waits};"
                f" job {job and job.state}: {job and job.error}"
            )
        time.sleep(0.2)


def test_a_fetch_waits_out_a_lock_held_past_the_old_retry_budget(
    short_wait_worker: Any, flaky: tuple[FlakyServer, Repo]
) -> None:
    server, repo = flaky
    repository = indexed(server)
    commit_files(repo, {"app.py": "def f():\n    return 2\n"}, parent=repo.refs[b"refs/heads/main"])
    since = short_wait_worker.log_path.stat().st_size
    with held_lock(repository):
        job_id = reindex(repository)
        hold_lock_until_waits(short_wait_worker, repository, OLD_MAX_RETRIES + 2, since)
        assert IndexJob.objects.get(pk=job_id).state == "queued"  # waiting, not failed
    job = wait_for_job(job_id)
    assert job.state == "done", (job.state, job.error)
    repository.refresh_from_db()
    assert repository.last_indexed_commit == repo.refs[b"refs/heads/main"].decode()


def test_a_transient_failure_after_lock_waits_still_gets_every_retry(
    short_wait_worker: Any, flaky: tuple[FlakyServer, Repo]
) -> None:
    server, repo = flaky
    repository = indexed(server)
    commit_files(repo, {"app.py": "def f():\n    return 3\n"}, parent=repo.refs[b"refs/heads/main"])
    since = short_wait_worker.log_path.stat().st_size
    with held_lock(repository):
        job_id = reindex(repository)
        hold_lock_until_waits(short_wait_worker, repository, OLD_MAX_RETRIES, since)
        server.failures_left = len(FETCH_RETRY_DELAYS)  # every retry but the final attempt fails
    job = wait_for_job(job_id)
    assert server.failed == len(FETCH_RETRY_DELAYS)
    assert job.state == "done", (job.state, job.error)
    repository.refresh_from_db()
    assert repository.last_indexed_commit == repo.refs[b"refs/heads/main"].decode()


def test_a_transient_failure_past_its_retries_still_fails_the_job(
    short_wait_worker: Any, flaky: tuple[FlakyServer, Repo]
) -> None:
    # The other side of the budget: lock waits do not make transient retries unlimited.
    server, _repo = flaky
    repository = indexed(server)
    since = short_wait_worker.log_path.stat().st_size
    with held_lock(repository):
        job_id = reindex(repository)
        hold_lock_until_waits(short_wait_worker, repository, 2, since)
        server.failures_left = 1000
    job = wait_for_job(job_id)
    assert job.state == "failed", (job.state, job.error)
    assert "503" in job.error
    assert server.failed == len(FETCH_RETRY_DELAYS) + 1  # the retries and the final attempt


def test_a_lock_held_past_the_bounded_wait_fails_the_job_saying_so(
    short_wait_worker: Any, flaky: tuple[FlakyServer, Repo]
) -> None:
    server, _repo = flaky
    repository = indexed(server)
    with held_lock(repository):
        job = wait_for_job(reindex(repository), seconds=LOCK_WAIT_MAX_SECS * 6)
    assert job.state == "failed", (job.state, job.error)
    assert f"repository {repository.pk} is being indexed by another run" in job.error
    assert "gave up after waiting" in job.error
    assert "REPO_SEARCH_LOCK_WAIT_MAX_SECS" in job.error
    repository.refresh_from_db()
    assert repository.status == "ready"  # the last complete index stays searchable
    assert repository.error.startswith("last re-index failed: ")
