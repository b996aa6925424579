"""Freshness of every indexed branch: the REST API takes the branch list, polling checks each
branch in one ref advertisement (and matches the globs again: a branch created upstream is
indexed, one deleted upstream stops), a push webhook to an indexed branch re-indexes that
branch, and a push to a branch nobody indexes is 202 with the reason."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from django.db import connection
from dulwich.repo import Repo

from indexing.models import IndexedBranch, IndexJob, JobState, Repository
from indexing.services import polling
from tests.accounts_support import token_client
from tests.indexing.git_server import GitHttpServer, commit_files, init_bare_repo
from tests.indexing.real_run import run_job
from tests.indexing.test_webhooks import INDEXED, PUSHED, deliver, github, push_body

pytestmark = pytest.mark.django_db

MAIN = {"src/app.py": "def greet(name):\n    return 'hello ' + name\n"}


@pytest.fixture
def source(tmp_path: Path) -> Iterator[Repo]:
    repo = init_bare_repo(str(tmp_path / "demo.git"))
    first = commit_files(repo, MAIN, message="main")
    commit_files(
        repo, MAIN | {"src/fix.py": "def release_fix():\n    return 1\n"},
        branch="release/1.0", parent=first, message="release",
    )  # fmt: skip
    yield repo
    repo.close()


@pytest.fixture
def server(source: Repo) -> Iterator[GitHttpServer]:
    with GitHttpServer({"team/demo.git": source}) as running:
        yield running


def _branch_text(branch: IndexedBranch) -> str:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT string_agg(content, '' ORDER BY path) FROM indexing_chunk c"
            " WHERE c.generation = %s OR c.file_id IN"
            " (SELECT file_id FROM indexing_sharedfile WHERE generation = %s)",
            [branch.generation, branch.generation],
        )
        return cursor.fetchone()[0] or ""


def _finish_queued(repository: Repository) -> None:
    """Run the queued jobs one after another, as the worker does (each queues the next)."""
    while job := repository.jobs.filter(state=JobState.QUEUED).first():
        finished = run_job(job)
        assert finished.state == "done", (finished.error, finished.failures)


def test_polling_checks_every_branch_once_and_follows_the_globs(server, source) -> None:
    api = token_client()
    added = api.post(
        "/api/repos",
        {"url": server.url("team/demo.git"), "branches": ["release/*"]},
        format="json",
    )
    assert added.status_code == 202, added.json()
    repository = Repository.objects.get(pk=added.json()["id"])
    assert repository.branch_specs == ["release/*"]
    _finish_queued(repository)  # the default branch, then release/1.0 (its glob matched)
    release = IndexedBranch.objects.get(repository=repository)
    assert release.name == "release/1.0" and release.generation > 0
    shown = api.get(f"/api/repos/{repository.pk}").json()
    assert shown["branches"] == ["release/*"]
    assert [b["name"] for b in shown["indexed_branches"]] == ["release/1.0"]
    assert shown["indexed_branches"][0]["commit"] == release.last_indexed_commit

    # release/1.0 moves and release/2.0 appears upstream; main stays.
    commit_files(
        source, MAIN | {"src/fix.py": "def release_fix_again():\n    return 2\n"},
        branch="release/1.0", parent=source.refs[b"refs/heads/release/1.0"], message="moved",
    )  # fmt: skip
    commit_files(source, MAIN, branch="release/2.0", parent=source.refs[b"refs/heads/main"])
    server.requests.clear()
    repository.refresh_from_db()
    outcome = polling.poll_repository(repository)

    assert server.requests == ["GET /team/demo.git/info/refs"]  # every tip, one request
    assert outcome.job_id is None  # the default branch did not move
    moved = {b.branch: b for b in outcome.branches}
    assert moved["release/1.0"].moved and moved["release/1.0"].queued
    assert IndexedBranch.objects.get(name="release/2.0").pending  # after release/1.0's job
    _finish_queued(Repository.objects.get(pk=repository.pk))
    release.refresh_from_db()
    assert "release_fix_again" in _branch_text(release)
    newer = IndexedBranch.objects.get(name="release/2.0")
    assert newer.generation > 0 and newer.shared_file_count == newer.file_count == 1

    # release/2.0 is deleted upstream: the glob no longer matches it, its index goes.
    del source.refs[b"refs/heads/release/2.0"]
    polling.poll_repository(Repository.objects.get(pk=repository.pk))
    assert list(IndexedBranch.objects.values_list("name", flat=True)) == ["release/1.0"]

    # PATCH [] stops indexing it; the default branch's rows stay.
    patched = api.patch(f"/api/repos/{repository.pk}", {"branches": []}, format="json")
    assert patched.status_code == 200, patched.json()
    assert patched.json()["indexed_branches"] == []
    assert "greet" in "".join(
        Repository.objects.get(pk=repository.pk)
        .chunks.filter(generation=repository.active_generation)
        .values_list("content", flat=True)
    )


def test_bad_branch_lists_are_400(server) -> None:
    api = token_client()
    answer = api.post(
        "/api/repos",
        {"url": server.url("team/demo.git"), "branches": ["no spaces allowed"]},
        format="json",
    )
    assert answer.status_code == 400
    assert answer.json()["error"]["code"] == "invalid_branches"
    assert answer.json()["error"]["details"] == {"field": "branches"}
    assert not Repository.objects.exists()


def test_a_push_to_an_indexed_branch_reindexes_that_branch() -> None:
    api = token_client()
    repository = Repository.objects.create(
        url="https://git.example.com/acme/demo.git", name="acme/demo", branch="main",
        status="ready", active_generation=1, last_indexed_commit=INDEXED,
    )  # fmt: skip
    branch = IndexedBranch.objects.create(
        repository=repository, name="release/1.0", generation=2, last_indexed_commit=INDEXED
    )
    body = push_body("github", "release/1.0", PUSHED)
    answer = deliver(api, repository, body, github(repository.webhook_secret, body))
    assert answer.status_code == 202
    assert (answer.json()["status"], answer.json()["branch"]) == ("queued", "release/1.0")
    job = IndexJob.objects.get(pk=answer.json()["job_id"])
    assert (job.branch_id, job.kind) == (branch.pk, "incremental")
    branch.refresh_from_db()
    assert branch.remote_tip == PUSHED

    # A push to main meanwhile: the default branch's re-index waits for the branch's job.
    main = push_body("github", "main", "c" * 40)
    waiting = deliver(api, repository, main, github(repository.webhook_secret, main))
    assert waiting.json()["status"] == "coalesced"
    assert Repository.objects.get(pk=repository.pk).reindex_pending

    other = push_body("github", "feature/x", PUSHED)
    ignored = deliver(api, repository, other, github(repository.webhook_secret, other))
    assert ignored.status_code == 202 and ignored.json()["status"] == "ignored"
    assert "'main', 'release/1.0'" in ignored.json()["reason"]
    assert IndexJob.objects.count() == 1
