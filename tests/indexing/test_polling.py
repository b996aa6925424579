"""Polling remotes for a new tip, against real git servers (dulwich smart HTTP, `git daemon`).

The index stages run in the test process (``tests.indexing.real_run``); the checks are the
service the beat-driven task calls. What is asserted is what a user sees: a moved tip queues a
re-index and its content becomes searchable, an unchanged one costs no pack, a failing remote
shows its error and is checked less often, then recovers.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from django.test import override_settings
from django.utils import timezone
from dulwich.repo import Repo

from indexing.models import Chunk, IndexJob, JobState, Repository
from indexing.services import polling
from indexing.services.repositories import add_repository, reindex_repository
from tests.indexing.git_server import GitHttpServer, commit_files, init_bare_repo
from tests.indexing.polling_support import CountingRelay, GitDaemon
from tests.indexing.real_run import run_job

pytestmark = pytest.mark.django_db

# Incompressible, so a pack with it is far larger than any ref advertisement.
NOISE = os.urandom(96 * 1024).hex()
FILES = {
    "src/app.py": "def greet(name):\n    return 'hello ' + name\n",
    "data/noise.txt": NOISE,
}


@pytest.fixture
def source(tmp_path: Path) -> Iterator[Repo]:
    repo = init_bare_repo(str(tmp_path / "demo.git"))
    commit_files(repo, FILES, message="first")
    yield repo
    repo.close()


@pytest.fixture
def server(source: Repo) -> Iterator[GitHttpServer]:
    with GitHttpServer({"team/demo.git": source}) as running:
        yield running


def indexed(url: str) -> Repository:
    job = run_job(add_repository(url, "", "team/demo", False))
    assert job.state == "done", (job.state, job.error)
    return Repository.objects.get(pk=job.repository_id)


def live_contents(repository: Repository) -> str:
    repository.refresh_from_db()
    chunks = Chunk.objects.filter(repository=repository, generation=repository.active_generation)
    return "".join(chunks.values_list("content", flat=True))


def test_an_unchanged_tip_costs_one_ref_advertisement_and_no_pack(server, source) -> None:
    repository = indexed(server.url("team/demo.git"))
    server.requests.clear()
    server.bytes_sent = 0

    outcome = polling.poll_repository(repository)

    assert outcome.job_id is None and not outcome.moved
    assert server.requests == ["GET /team/demo.git/info/refs"]
    assert server.bytes_sent < 2_000 < len(NOISE) // 10
    repository.refresh_from_db()
    assert repository.remote_tip == repository.last_indexed_commit
    assert repository.last_polled_at is not None and repository.poll_error == ""
    assert repository.behind is False
    assert not IndexJob.objects.filter(repository=repository, state=JobState.QUEUED).exists()


def test_a_moved_tip_queues_an_incremental_reindex_that_makes_it_searchable(server, source) -> None:
    repository = indexed(server.url("team/demo.git"))
    parent = source.refs[b"refs/heads/main"]
    moved = commit_files(
        source,
        FILES | {"src/new.py": "def freshly_pushed_function():\n    return 7\n"},
        parent=parent,
        message="second",
    )

    outcome = polling.poll_repository(repository)

    assert outcome.moved and outcome.job_id is not None and not outcome.coalesced
    repository.refresh_from_db()
    assert repository.remote_tip == moved.decode() and repository.behind is True
    job = IndexJob.objects.get(pk=outcome.job_id)
    assert job.kind == "incremental"
    finished = run_job(job)
    assert finished.state == "done"
    assert "freshly_pushed_function" in live_contents(repository)
    repository.refresh_from_db()
    assert repository.last_indexed_commit == moved.decode() and repository.behind is False

    # Checked again: nothing moved, nothing queued.
    again = polling.poll_repository(repository)
    assert again.job_id is None
    assert IndexJob.objects.filter(repository=repository).count() == 2


def test_a_force_push_is_indexed_as_the_new_history(server, source) -> None:
    repository = indexed(server.url("team/demo.git"))
    rewritten = commit_files(
        source, {"src/app.py": "def rewritten_history():\n    return 0\n"}, message="rewrite"
    )  # no parent: the old tip is not an ancestor

    outcome = polling.poll_repository(repository)

    assert outcome.moved and outcome.job_id is not None
    assert run_job(IndexJob.objects.get(pk=outcome.job_id)).state == "done"
    contents = live_contents(repository)
    assert "rewritten_history" in contents and "def greet" not in contents
    assert repository.last_indexed_commit == rewritten.decode()


def test_a_failing_remote_backs_off_shows_its_error_then_recovers(server, source) -> None:
    repository = indexed(server.url("team/demo.git"))
    interval = polling.poll_interval(repository)
    server.fail_with = "503 Service Unavailable"

    before = timezone.now()
    first = polling.poll_repository(repository)
    repository.refresh_from_db()
    assert first.job_id is None and "503" in first.reason
    assert repository.poll_error == first.reason and repository.poll_failures == 1
    assert repository.next_poll_at is not None
    waited = (repository.next_poll_at - before).total_seconds()
    assert 2 * interval * 0.9 <= waited <= 2 * interval * 1.1 + 5

    polling.poll_repository(repository)
    repository.refresh_from_db()
    assert repository.poll_failures == 2
    waited = (repository.next_poll_at - timezone.now()).total_seconds()
    assert 4 * interval * 0.9 - 5 <= waited <= 4 * interval * 1.1
    shown = Repository.objects.get(pk=repository.pk)
    assert "503" in shown.poll_error

    server.fail_with = None
    commit_files(source, FILES | {"b.py": "B = 1\n"}, parent=source.refs[b"refs/heads/main"])
    recovered = polling.poll_repository(repository)
    repository.refresh_from_db()
    assert recovered.job_id is not None
    assert repository.poll_error == "" and repository.poll_failures == 0


def test_a_remote_that_is_gone_is_a_visible_error(server, source) -> None:
    repository = indexed(server.url("team/demo.git"))
    server.close()
    outcome = polling.poll_repository(repository)
    repository.refresh_from_db()
    assert outcome.job_id is None
    assert repository.poll_error and "127.0.0.1" in repository.poll_error
    assert repository.poll_failures == 1
    assert repository.chunk_count > 0  # the index it had is still served


def test_a_branch_deleted_upstream_keeps_the_index_and_says_so(server, source) -> None:
    repository = indexed(server.url("team/demo.git"))
    commit_files(source, FILES, branch="trunk")
    source.refs.set_symbolic_ref(b"HEAD", b"refs/heads/trunk")
    del source.refs[b"refs/heads/main"]

    outcome = polling.poll_repository(repository)

    repository.refresh_from_db()
    assert outcome.job_id is None
    assert "no longer exists" in repository.poll_error and "kept" in repository.poll_error
    assert repository.remote_tip == "" and repository.behind is None
    assert "def greet" in live_contents(repository)
    assert not IndexJob.objects.filter(repository=repository, state=JobState.QUEUED).exists()


def test_a_repository_with_a_running_job_is_never_polled(server, source) -> None:
    repository = indexed(server.url("team/demo.git"))
    _job, created = reindex_repository(repository)
    assert created
    server.requests.clear()

    assert repository.pk not in {r.pk for r in polling.due_repositories()}
    outcome = polling.poll_repository(repository)

    assert outcome.reason == "a job is running"
    assert server.requests == []
    assert IndexJob.objects.filter(repository=repository).count() == 2


def test_a_reindex_that_failed_is_not_queued_again_for_the_same_tip(server, source) -> None:
    repository = indexed(server.url("team/demo.git"))
    commit_files(source, FILES | {"c.py": "C = 1\n"}, parent=source.refs[b"refs/heads/main"])
    first = polling.poll_repository(repository)
    IndexJob.objects.filter(pk=first.job_id).update(state=JobState.FAILED, error="too large")
    repository.refresh_from_db()

    second = polling.poll_repository(repository)

    assert second.job_id is None and "too large" in second.reason
    assert IndexJob.objects.filter(repository=repository).count() == 2


def test_git_daemon_unchanged_tip_sends_no_pack_and_a_moved_one_is_indexed(
    tmp_path, source
) -> None:
    base = Path(source.path).parent
    with GitDaemon(base) as daemon, CountingRelay(daemon.port) as relay:
        url = f"git://127.0.0.1:{relay.port}/demo.git"
        repository = indexed(url)
        cloned = relay.bytes_from_server
        assert cloned > len(NOISE) // 4  # the clone carried the pack
        relay.bytes_from_server = 0

        unchanged = polling.poll_repository(repository)
        assert unchanged.job_id is None and not unchanged.moved
        assert 0 < relay.bytes_from_server < 2_000

        moved = commit_files(
            source,
            FILES | {"src/daemon.py": "def served_by_git_daemon():\n    pass\n"},
            parent=source.refs[b"refs/heads/main"],
        )
        outcome = polling.poll_repository(repository)
        assert outcome.moved and outcome.remote_tip == moved.decode()
        assert run_job(IndexJob.objects.get(pk=outcome.job_id)).state == "done"
        assert "served_by_git_daemon" in live_contents(repository)


def test_the_dispatcher_claims_due_repositories_once_spread_over_the_tick() -> None:
    now = timezone.now()
    due = [
        Repository.objects.create(
            url=f"https://h.example/r{i}.git", name=f"r{i}", active_generation=1
        )
        for i in range(40)
    ]
    Repository.objects.create(url="https://h.example/never.git", name="n", active_generation=0)
    Repository.objects.create(
        url="https://h.example/off.git", name="off", active_generation=1, poll_interval_secs=0
    )
    Repository.objects.create(
        url="https://h.example/later.git",
        name="later",
        active_generation=1,
        next_poll_at=now + timedelta(minutes=5),
    )

    with override_settings(REPO_SEARCH_POLL_TICK_SECS=30):
        claimed = polling.claim_due_repositories(now)

    assert {pk for pk, _ in claimed} == {r.pk for r in due}
    delays = [delay for _, delay in claimed]
    assert all(0 <= delay <= 30 for delay in delays)
    assert len({round(delay) for delay in delays}) > 10  # not all in the same second
    assert polling.claim_due_repositories(now) == []  # taken until their next interval
    next_polls = {r.next_poll_at for r in Repository.objects.filter(pk__in=[r.pk for r in due])}
    assert len(next_polls) > 10  # jittered, so they stay spread


def test_polling_off_globally_leaves_only_the_overrides() -> None:
    Repository.objects.create(url="https://h.example/a.git", name="a", active_generation=1)
    fast = Repository.objects.create(
        url="https://h.example/b.git", name="b", active_generation=1, poll_interval_secs=60
    )
    with override_settings(REPO_SEARCH_POLL_INTERVAL_SECS=0):
        assert [r.pk for r in polling.due_repositories()] == [fast.pk]
    with override_settings(REPO_SEARCH_POLL_MAX_BACKOFF_SECS=3600):
        assert polling.backoff_seconds(600, 1) == 1200
        assert polling.backoff_seconds(600, 10) == 3600
